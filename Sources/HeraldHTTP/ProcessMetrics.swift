#if canImport(Glibc)
import Glibc
#endif

/// Herald's version, printed by `herald --version` and reported as `herald_build_info`.
public enum HeraldVersion {
    public static let current = "0.14.0-dev"
}

/// The process metrics Prometheus' client libraries export, in their names and units, and
/// `herald_build_info`, appended to every `/metrics` (the gateway's admin port, the provider
/// service): CPU seconds, resident and virtual memory, open descriptors against their limit, the
/// start time. Read from `/proc/self` at each scrape (Linux); a value that cannot be read is left
/// out, never guessed.
public enum ProcessMetrics {
    /// The exposition text (Prometheus 0.0.4) for this process now.
    public static func exposition(component: String) -> [UInt8] {
        var text = ""
        func metric(_ name: String, _ type: String, _ help: String, _ value: Double?) {
            guard let value else { return }
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(format(value))\n"
        }
        let stat = selfStat()
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let page = Double(sysconf(Int32(_SC_PAGESIZE)))
        metric("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
               stat.map { Double($0.userTicks + $0.systemTicks) / ticks })
        metric("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", stat.map { Double($0.residentPages) * page })
        metric("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", stat.map { Double($0.virtualBytes) })
        metric("process_open_fds", "gauge", "Number of open file descriptors.", openDescriptors().map(Double.init))
        var limit = rlimit()
        metric("process_max_fds", "gauge", "Maximum number of open file descriptors.",
               getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 ? Double(limit.rlim_cur) : nil)
        metric("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
               stat.flatMap { stat in bootTime().map { Double($0) + Double(stat.startTicks) / ticks } })
        text += "# HELP herald_build_info Herald's version and component (always 1).\n# TYPE herald_build_info gauge\n"
        text += "herald_build_info{version=\"\(HeraldVersion.current)\",component=\"\(component)\"} 1\n"
        return Array(text.utf8)
    }

    struct Stat {
        var userTicks: UInt64, systemTicks: UInt64, startTicks: UInt64, virtualBytes: UInt64, residentPages: UInt64
    }

    /// `/proc/self/stat`: the fields after the command name (which may hold spaces and parentheses).
    static func selfStat() -> Stat? {
        guard let text = read("/proc/self/stat", limit: 4096), let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state): field N is fields[N - 3].
        func field(_ number: Int) -> UInt64? { fields.count > number - 3 ? UInt64(fields[number - 3]) : nil }
        guard let user = field(14), let system = field(15), let start = field(22), let virtual = field(23), let resident = field(24) else { return nil }
        return Stat(userTicks: user, systemTicks: system, startTicks: start, virtualBytes: virtual, residentPages: resident)
    }

    /// `btime` of `/proc/stat`: the boot time, seconds since the epoch.
    static func bootTime() -> UInt64? {
        guard let text = read("/proc/stat", limit: 1 << 20) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return UInt64(line.dropFirst("btime ".count))
        }
        return nil
    }

    static func openDescriptors() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            if entry.pointee.d_name.0 != UInt8(ascii: ".") { count += 1 }
        }
        return count - 1  // the directory's own descriptor
    }

    /// A small file of /proc, at most `limit` bytes.
    static func read(_ path: String, limit: Int) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: limit)
        var total = 0
        while total < limit {
            let count = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + total, limit - total) }
            guard count > 0 else { break }
            total += count
        }
        return String(decoding: bytes[..<total], as: UTF8.self)
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
