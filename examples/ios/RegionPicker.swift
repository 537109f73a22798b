// The app side of a user's own set (docs/CALL-DIRECTORY.md, "Sources and packs"): the starter
// set that ships in the app bundle, the regions the user picks from a directory publisher,
// and a block list from another publisher, each a source of the installed store. Every call
// below is one atomic step (a new generation, or nothing changed); run them off the main
// thread (they download and verify), then reload the extensions whose slot changed (a step
// keeps the slots' bounds where they still fit: a region added to slot 3 reloads extension 3
// only).
//
// Compiled here? Type-checked on Linux against the package (typecheck-linux.sh); not built for
// iOS. Paths, URLs and key texts are examples.
import CallKit
import CallerIDDirectory
import CallerIDURLSession
import Foundation

struct RegionPicker {
    let store: InstalledStore
    /// The directory publisher (regions) and the block-list publisher, each with its own key
    /// (shipped in the app as the text of `lookup keygen`'s NAME.pub).
    let cityURL = "https://cid.example.org/city"
    let cityKey: SigningPublicKey
    let blocksURL = "https://spam.example.net/list"
    let blocksKey: SigningPublicKey

    init(groupContainer: URL, cityKeyText: String, blocksKeyText: String) throws {
        store = try InstalledStore(path: groupContainer.appendingPathComponent("callerid").path)
        cityKey = try SigningPublicKey(fileText: cityKeyText, path: "city.pub")
        blocksKey = try SigningPublicKey(fileText: blocksKeyText, path: "blocks.pub")
    }

    private func fetcher(_ url: String, _ key: SigningPublicKey) -> DirectoryFetcher {
        DirectoryFetcher(baseURL: url, store: store, trust: key, client: URLSessionHTTPClient())
    }

    /// First start: the starter set in the bundle answers before any region is downloaded
    /// (a local source: priority −1, below every fetched source). Two extensions (slots).
    /// The bundle's `starter/` is a `lookup build --split-by field --top N --top-only` of the
    /// publisher's directory: only each region's top numbers, under the publisher's region
    /// names, so that a region subscribed later replaces the starter's part of it whole.
    func installStarterIfNeeded() throws {
        guard try store.sources().isEmpty, let folder = Bundle.main.path(forResource: "starter", ofType: nil) else { return }
        var settings = FeedSettings()
        settings.slots = DirectoryReload.extensions.count
        try store.installSource("starter", from: folder, settings: settings)
        DirectoryReload.reloadAll()
    }

    /// The picker's rows: every region the publisher offers (from its signed manifest), with
    /// whether it is installed.
    func rows() throws -> [(region: SourceOffer.Region, installed: Bool)] {
        let offer = try DirectoryFetcher.offer(baseURL: cityURL, trust: cityKey, client: URLSessionHTTPClient())
        let installed = Set(try store.sources().first { $0.source.name == "city" }?.regions.map(\.name) ?? [])
        return offer.regions.map { ($0, installed.contains($0.name)) }
    }

    /// The user ticked a region: only its files are downloaded.
    func add(region: String) throws {
        reload(after: try fetcher(cityURL, cityKey).subscribe("city", regions: [region]).install)
    }

    /// The user unticked a region: its packs leave the store.
    func remove(region: String) throws {
        reload(after: try store.unsubscribe("city", regions: [region]))
    }

    /// The user turned the block list on (above the regions) or off.
    func setBlockList(_ on: Bool) throws {
        if on {
            reload(after: try fetcher(blocksURL, blocksKey).subscribe("blocks", priority: 1).install)
        } else if try store.sources().contains(where: { $0.source.name == "blocks" }) {
            reload(after: try store.removeSource("blocks"))
        }
    }

    /// A background refresh: every subscribed source brought up to date (only the changed
    /// files of the subscribed regions are downloaded). One source failing leaves the others'
    /// steps and the installed set untouched.
    func refresh() -> [String: Error] {
        var failures: [String: Error] = [:]
        let sources = (try? store.sources()) ?? []
        for (name, url, key) in [("city", cityURL, cityKey), ("blocks", blocksURL, blocksKey)] where sources.contains(where: { $0.source.name == name }) {
            do { reload(after: try fetcher(url, key).update(name).install) } catch { failures[name] = error }
        }
        return failures
    }

    /// After a step that installed a generation, the extensions whose slot changed reload
    /// (the plan's per-slot record, SlotPlan.isLoaded(slot:by:)); the others keep what they hold.
    private func reload(after install: InstalledStore.InstallReport?) {
        guard install != nil else { return }
        DirectoryReload.reloadChanged(storePath: store.path)
    }
}
