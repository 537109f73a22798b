// A note written when SIGINT or SIGTERM ends a command (C: Sources/CPortable/signals.c).
internal import CPortable

/// What a command says on stderr when an interrupt (SIGINT, Ctrl-C; or SIGTERM) ends it: the
/// note of the phase it is in, written by the signal handler in one `write(2)`. The process
/// then still ends by the signal (a shell shows 130 for SIGINT, 143 for SIGTERM), so a script
/// that ran it stops as it would have without the note.
package enum InterruptNote {
    /// The phases a command tells apart.
    package enum Phase: Int32, Sendable {
        case first = 0, second = 1, third = 2
    }

    /// Sets the note of `phase` (nil: nothing is written in that phase). A line end is added
    /// when `text` lacks one.
    package static func set(_ phase: Phase, _ text: String?) {
        guard let text else { return cport_interrupt_note_set(phase.rawValue, nil) }
        cport_interrupt_note_set(phase.rawValue, text.hasSuffix("\n") ? text : text + "\n")
    }

    /// From now on an interrupt writes `phase`'s note. Safe from any thread.
    package static func enter(_ phase: Phase) {
        cport_interrupt_note_phase(phase.rawValue)
    }

    /// Installs the handler on SIGINT and SIGTERM (phase ``Phase/first`` until ``enter(_:)``).
    package static func install() {
        _ = cport_interrupt_note_install()
    }
}
