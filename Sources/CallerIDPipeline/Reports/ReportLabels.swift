import Foundation

// The labels of a report build: what the person called sees ("Debt collector · 10+ reports",
// "Коллекторы · 10+ жалоб"). Counts are rounded down to 1, 2, 3, 4, then 5, 10, 20, 50, 100…
// with a "+", so a count moving 37 → 38 changes no label and no phone reloads for it.

enum ReportLabels {
    /// The count as shown: exact below 5, else the largest of 5, 10, 20, 50, 100, 200, 500…
    /// not above it, with "+".
    static func rounded(_ n: Int) -> String {
        if n < 5 { return String(n) }
        var step = 5
        while true {
            // 5, 10, 20, 50, 100, 200, 500…: ×2, except ×2.5 after a step that starts with 2.
            var lead = step
            while lead >= 10 { lead /= 10 }
            let next = lead == 2 ? step / 2 * 5 : step * 2
            if next > n { break }
            step = next
        }
        return "\(step)+"
    }

    /// The rounded count with its noun, in the language.
    static func reporters(_ n: Int, language: ReportLanguage) -> String {
        let shown = rounded(n)
        switch language {
        case .en:
            return shown == "1" ? "1 report" : "\(shown) reports"
        case .ru:
            // 1 жалоба, 2–4 жалобы, otherwise жалоб (every rounded count from 5 up ends in 0 or 5).
            switch n {
            case 1: return "1 жалоба"
            case 2...4: return "\(n) жалобы"
            default: return "\(shown) жалоб"
            }
        }
    }

    /// The display name of a blocking category (its own name when none is known).
    static func displayName(_ category: String, language: ReportLanguage) -> String {
        let names: [String: (en: String, ru: String)] = [
            "block": ("Unwanted call", "Нежелательный звонок"),
            "collector": ("Debt collector", "Коллекторы"),
            "fraud": ("Fraud", "Мошенничество"),
            "pyramid": ("Financial pyramid", "Финансовая пирамида"),
            "robocall": ("Robocall", "Автообзвон"),
            "scam": ("Scam", "Мошенники"),
            "spam": ("Spam", "Спам"),
            "survey": ("Survey", "Опросы"),
            "telemarketing": ("Telemarketing", "Реклама"),
        ]
        guard let known = names[category] else { return category }
        return language == .en ? known.en : known.ru
    }

    static let fields: Set<String> = ["category", "reporters", "count", "name"]

    /// The first `{field}` of a template that is not one of ``fields``; nil when all are known.
    static func unknownField(in template: String) -> String? {
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{") {
            guard let close = rest[open...].firstIndex(of: "}") else { return nil }
            let name = String(rest[rest.index(after: open)..<close])
            if !fields.contains(name) { return name }
            rest = rest[rest.index(after: close)...]
        }
        return nil
    }

    /// A template with its fields filled in.
    static func render(_ template: String, category: String, reporters: Int, name: String, language: ReportLanguage) -> String {
        template
            .replacingOccurrences(of: "{category}", with: displayName(category, language: language))
            .replacingOccurrences(of: "{reporters}", with: Self.reporters(reporters, language: language))
            .replacingOccurrences(of: "{count}", with: rounded(reporters))
            .replacingOccurrences(of: "{name}", with: name)
    }
}
