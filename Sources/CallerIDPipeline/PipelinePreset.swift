/// Ready-made options for a known public data set: how its files are read and what a build of
/// them writes (`lookup build --preset NAME`). Options set after the preset override it.
///
/// The Russian numbering plan is published by Rossvyaz as three CSV files (`Kody_ABC-3kh.csv`,
/// `Kody_ABC-8kh.csv`, `Kody_DEF-9kh.csv`), windows-1251, `;`-separated, with a header row
/// `АВС/ DEF;От;До;Емкость;Оператор;Регион`: each row is a range, an area code (column 1)
/// followed by the first and last 7-digit numbers (columns 2 and 3, written without their
/// leading zeros), the operator (5) and the region (6, `Абакан |Республика Хакасия`). Both
/// presets below read them that way, as Russian (`RU`) national numbers.
public enum PipelinePreset: String, CaseIterable, Sendable {
    /// The whole plan in one database of ranges, each labelled "operator, region" (columns 5
    /// and 6): ``PipelineOptions/keepRanges``, so nothing is expanded and no expansion limit
    /// applies; a row of one number stays an entry.
    case rossvyaz
    /// The plan expanded into entries labelled with the operator, one database per region (the
    /// text after the last `|` of column 6: ``RegionSplit/field``). A range of more than
    /// ``PipelineOptions/maxRangeExpansion`` numbers is a rejected row, counted against
    /// ``PipelineOptions/maxBadRows``: both are left to the caller.
    case rossvyazRegions = "rossvyaz-regions"

    /// The options of this preset, on top of the defaults of ``PipelineOptions/init()``.
    public var options: PipelineOptions {
        var o = PipelineOptions()
        o.format = .csv(delimiter: UInt8(ascii: ";"))
        o.encoding = .windows1251
        o.numberPrefixField = .position(1)
        o.numberField = .position(2)
        o.rangeEndField = .position(3)
        o.padNumber = 7
        o.country = "RU"
        o.labelField = .position(5)
        switch self {
        case .rossvyaz:
            o.additionalLabelFields = [.position(6)]
            o.keepRanges = true
        case .rossvyazRegions:
            o.regionField = .position(6)
            o.regionAfter = "|"
            o.split = .field
        }
        return o
    }
}
