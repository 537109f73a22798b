import Foundation
import CallerID

/// One line of progress on stderr, redrawn in place ("\r", erase to end of line) and cleared
/// at the end, so nothing of it stays on screen. A phase (reading a file, sorting, writing a
/// database) is shown as soon as it starts; updates within a phase at most every 0.2 s.
/// Disabled (every call does nothing) unless progress was asked for or stderr is a terminal.
final class ProgressLine {
    let enabled: Bool
    private let now: () -> Double
    private let write: (String) -> Void
    private var lastShown = -Double.infinity
    private var visible = false
    static let interval = 0.2
    /// Characters at most, so that the line never wraps (a wrapped line cannot be redrawn): one
    /// less than `COLUMNS`, else than the terminal's width, else than 80.
    let width: Int

    init(enabled: Bool,
         now: @escaping () -> Double = { ProcessInfo.processInfo.systemUptime },
         write: @escaping (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }) {
        self.enabled = enabled
        self.now = now
        self.write = write
        // COLUMNS when set (shells keep it unexported), else the terminal's own width.
        let columns = ProcessInfo.processInfo.environment["COLUMNS"].flatMap { Int($0) }
            ?? StandardStream.error.terminalColumns ?? 80
        width = max(20, columns - 1)
    }

    /// The start of a phase: always shown.
    func phase(_ text: String) {
        show(text)
    }

    /// Within a phase: shown if the last line is old enough.
    func update(_ text: String) {
        guard enabled, now() - lastShown >= ProgressLine.interval else { return }
        show(text)
    }

    /// Removes the line (before other output, and at the end).
    func clear() {
        guard enabled, visible else { return }
        write("\r\u{1B}[K")
        visible = false
    }

    /// Prints a line for good on stderr (an error, a warning) without mixing it with the progress
    /// line; the next update draws the progress again.
    func printLine(_ text: String) {
        clear()
        printError(text)
    }

    private func show(_ text: String) {
        guard enabled else { return }
        write("\r\u{1B}[K" + fitted(text, width: width))
        visible = true
        lastShown = now()
    }
}

/// `text` in at most `width` characters: whole when it fits, else cut with "…" on a word
/// boundary (a space, `_`, `-`, `.` or `/`) when one is in the last third, else on a
/// character (grapheme) boundary — never inside a character, never without the ellipsis.
func fitted(_ text: String, width: Int) -> String {
    guard text.count > width else { return text }
    guard width > 1 else { return width == 1 ? "…" : "" }
    let characters = Array(text)
    let room = width - 1
    func isBreak(_ c: Character) -> Bool { c == " " || c == "_" || c == "-" || c == "." || c == "/" }
    var cut = room
    var p = room
    while p > 0 && p * 3 >= room * 2 {
        if isBreak(characters[p]) || isBreak(characters[p - 1]) { cut = p; break }
        p -= 1
    }
    var kept = String(characters[0..<cut])
    while kept.last == " " { kept.removeLast() }
    return kept + "…"
}

/// `text` cut with ``fitted(_:width:)`` and padded with spaces to `width` characters.
func column(_ text: String, width: Int) -> String {
    let t = fitted(text, width: width)
    return t + String(repeating: " ", count: max(0, width - t.count))
}
