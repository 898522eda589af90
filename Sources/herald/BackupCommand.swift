import ArgumentParser
import Crypto
import Foundation
import HeraldDevice
import HeraldCore
import HeraldOperations
import HeraldStoreSQLite

struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy a gateway's data directory while it runs: its SQLite store as one consistent snapshot, its TLS files and the rest.",
        discussion: """
            The store is copied with SQLite's online backup (one read transaction: the gateway keeps
            accepting and delivering meanwhile); the other files of the data directory (the TLS CA and
            certificates with their keys, …) are copied as they are. OUT is a new directory with a
            MANIFEST.json of every file's SHA-256, which herald restore checks. A backup that fails (a
            full disk) leaves nothing at OUT. Every file keeps its mode. A gateway that runs with
            --tls-cert/--tls-key keeps those files outside its data directory: give the same two flags
            to include them (restore puts them back where they were); without them, the backup says
            that they are not included. A PostgreSQL store is backed up with pg_dump (docs/operations.md).

            Example: herald backup --data-dir ./herald-data --out /backups/herald-2026-11-28
            """)

    @OptionGroup var directory: DataDirectoryOptions

    @Option(help: ArgumentHelp("The backup directory to create (it must not exist).", valueName: "OUT"))
    var out: String

    @Option(help: ArgumentHelp("The gateway's --tls-cert file, to include (herald restore puts it back at this path).", valueName: "PEM"))
    var tlsCert: String?

    @Option(help: ArgumentHelp("The gateway's --tls-key file, to include (herald restore puts it back at this path).", valueName: "PEM"))
    var tlsKey: String?

    func run() async throws {
        if let url = directory.databaseURL {
            throw ValidationError("--database \(url.prefix(40))…: a PostgreSQL store is backed up with pg_dump -Fc and restored with pg_restore into an empty database (docs/operations.md); herald backup copies a --data-dir")
        }
        let source = directory.dataDirectory
        guard FileManager.default.fileExists(atPath: directory.databasePath) else {
            throw ValidationError("--data-dir \(source) has no herald.sqlite: it is not a gateway's data directory")
        }
        let target = (out as NSString).standardizingPath
        guard !FileManager.default.fileExists(atPath: target) else { throw ValidationError("--out \(target) exists already; give a new directory") }
        do {
            try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        } catch {
            throw ValidationError("cannot create --out \(target): \(error.localizedDescription)")
        }
        let external = [tlsCert, tlsKey].compactMap { $0 }.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        do {
            let manifest = try Self.copy(from: source, to: target, external: external, createdAtMilliseconds: SystemWallClock().nowMilliseconds())
            let total = manifest.files.reduce(0) { $0 + $1.bytes }
            printLineFlushed("backed up \(source) to \(target): \(manifest.files.count) files, \(total) bytes (restore: herald restore --from \(target) --data-dir EMPTY_DIR)")
            if external.isEmpty && !manifest.files.contains(where: { $0.path == "tls/server.pem" }) {
                printError("herald: note: \(source) has no development certificate (tls/server.pem): if its gateway runs with --tls-cert/--tls-key, those files are not included; give the same flags to herald backup to include them")
            }
        } catch {
            try? FileManager.default.removeItem(atPath: target)
            printError("herald: backup failed, nothing was kept at \(target): \(error)")
            throw ExitCode(1)
        }
    }

    /// Copies the store, then every other file; writes the manifest last (dated `createdAtMilliseconds`).
    /// `external` are absolute paths of files from outside the data directory (the gateway's TLS
    /// files), copied into `external/` with their origin.
    static func copy(from source: String, to target: String, external: [String] = [], createdAtMilliseconds: Int64) throws -> BackupManifest {
        let database = "herald.sqlite"
        let databaseCopy = (target as NSString).appendingPathComponent(database)
        try SQLiteBackup.copy(databaseAt: (source as NSString).appendingPathComponent(database), to: databaseCopy)
        // SQLite creates the copy with the process's umask: it gets the store's own mode.
        let databaseMode = try mode(of: (source as NSString).appendingPathComponent(database))
        guard chmod(databaseCopy, mode_t(databaseMode)) == 0 else { throw CommandFileError("cannot set the mode of \(databaseCopy): \(String(cString: strerror(errno)))") }
        var files = [try entry(database, in: target, mode: databaseMode)]
        let skipped: Set<String> = ["herald.lock", database, database + "-wal", database + "-shm", database + "-journal"]
        guard let walker = FileManager.default.enumerator(atPath: source) else { throw CommandFileError("cannot read \(source)") }
        var others: [String] = []
        while let relative = walker.nextObject() as? String {
            guard !skipped.contains(relative) else { continue }
            let path = (source as NSString).appendingPathComponent(relative)
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            guard attributes[.type] as? FileAttributeType == .typeRegular else { continue }  // directories come with their files; no links
            others.append(relative)
        }
        for relative in others.sorted() {
            let from = (source as NSString).appendingPathComponent(relative)
            let to = (target as NSString).appendingPathComponent(relative)
            try FileManager.default.createDirectory(atPath: (to as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let mode = try mode(of: from)
            try writeExclusively(try read(from), to: to, mode: mode)
            files.append(try entry(relative, in: target, mode: mode))
        }
        if !external.isEmpty {
            try FileManager.default.createDirectory(atPath: (target as NSString).appendingPathComponent("external"), withIntermediateDirectories: true)
        }
        for (index, origin) in external.enumerated() {
            let relative = "external/\(index + 1)-\((origin as NSString).lastPathComponent)"
            let mode = try mode(of: origin)
            try writeExclusively(try read(origin), to: (target as NSString).appendingPathComponent(relative), mode: mode)
            var file = try entry(relative, in: target, mode: mode)
            file.origin = origin
            files.append(file)
        }
        let manifest = BackupManifest(created: PlanFormat.utcString(createdAtMilliseconds), files: files)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try writeExclusively(encoder.encode(manifest), to: (target as NSString).appendingPathComponent(BackupManifest.name), mode: 0o600)
        return manifest
    }

    static func mode(of path: String) throws -> Int {
        var status = stat()
        guard stat(path, &status) == 0 else { throw CommandFileError("cannot read \(path): \(String(cString: strerror(errno)))") }
        return Int(status.st_mode & 0o777)
    }

    static func entry(_ relative: String, in directory: String, mode: Int) throws -> BackupManifest.File {
        let bytes = try read((directory as NSString).appendingPathComponent(relative))
        return BackupManifest.File(path: relative, bytes: bytes.count, mode: mode, sha256: Hex.encode(SHA256.hash(data: bytes)))
    }

    static func read(_ path: String) throws -> Data {
        guard let data = FileManager.default.contents(atPath: path) else { throw CommandFileError("cannot read \(path)") }
        return data
    }

    /// Writes a new file (never over an existing one), with `mode`; a short write (a full disk) throws.
    static func writeExclusively(_ data: Data, to path: String, mode: Int) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(mode & 0o777))
        guard descriptor >= 0 else { throw CommandFileError("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        // Exactly `mode`, whatever the umask.
        guard fchmod(descriptor, mode_t(mode & 0o777)) == 0 else { throw CommandFileError("cannot set the mode of \(path): \(String(cString: strerror(errno)))") }
        try data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                guard written > 0 else { throw CommandFileError("cannot write \(path): \(String(cString: strerror(errno)))") }
                offset += written
            }
        }
        guard fsync(descriptor) == 0 else { throw CommandFileError("cannot write \(path): \(String(cString: strerror(errno)))") }
    }
}

struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a herald backup into an empty data directory (never over a live or used one).",
        discussion: """
            Checks every file of the backup against its MANIFEST.json and the store's integrity
            (PRAGMA integrity_check) before copying anything; then herald gateway --data-dir DIR starts
            from it, with the same CA and certificates as the gateway that was backed up.

            Example: herald restore --from /backups/herald-2026-11-28 --data-dir ./herald-data
            """)

    @Option(help: ArgumentHelp("The backup directory herald backup wrote.", valueName: "BACKUP"))
    var from: String

    @Option(name: .customLong("data-dir"), help: ArgumentHelp("The data directory to restore into: new, or empty.", valueName: "DIR"))
    var dataDirectory: String

    func run() async throws {
        let backup = (from as NSString).standardizingPath
        let target = (dataDirectory as NSString).standardizingPath
        let manifest = try Self.check(backup)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: target, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw ValidationError("--data-dir \(target) is a file, not a directory") }
            let present = (try? FileManager.default.contentsOfDirectory(atPath: target)) ?? []
            guard present.isEmpty else {
                throw ValidationError("--data-dir \(target) is not empty (it holds \(present.sorted().prefix(3).joined(separator: ", "))): restore only into an empty directory; stop its gateway and move the directory away first")
            }
        }
        // Files from outside the data directory go back where they were: never over a different
        // file (checked before anything is written); one that is there already, the same, is kept.
        var putBack: [BackupManifest.File] = []
        for file in manifest.files {
            guard let origin = file.origin else { continue }
            var status = stat()
            if lstat(origin, &status) == 0 {
                // Read only a regular file of the backup's size (never a device or a link).
                guard (status.st_mode & S_IFMT) == S_IFREG, Int(status.st_size) == file.bytes,
                      let present = FileManager.default.contents(atPath: origin), Hex.encode(SHA256.hash(data: present)) == file.sha256 else {
                    throw ValidationError("the backup's \(file.path) goes back to \(origin), where a different file is: move it away (or compare them) and restore again")
                }
            } else {
                putBack.append(file)
            }
        }
        // Held while restoring: a gateway started on the directory meanwhile is refused.
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        try DirectoryLock.hold((target as NSString).appendingPathComponent("herald.lock"), whenHeld: "a herald gateway started on --data-dir \(target) meanwhile; stop it")
        do {
            for file in manifest.files {
                let to = file.origin ?? (target as NSString).appendingPathComponent(file.path)
                if file.origin != nil && !putBack.contains(file) { continue }
                try FileManager.default.createDirectory(atPath: (to as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                try BackupCommand.writeExclusively(try BackupCommand.read((backup as NSString).appendingPathComponent(file.path)), to: to, mode: file.mode)
            }
        } catch {
            printError("herald: restore failed part way: \(error); empty \(target) before trying again")
            throw ExitCode(1)
        }
        let outside = manifest.files.compactMap(\.origin)
        printLineFlushed("restored \(backup) (\(manifest.created)) into \(target): \(manifest.files.count - outside.count) files"
            + (outside.isEmpty ? "" : ", and \(outside.joined(separator: ", ")) (\(putBack.count) put back, \(outside.count - putBack.count) already there)")
            + "; start it with herald gateway --data-dir \(target)")
    }

    /// Reads the manifest (bounded), refuses a path that leaves the backup, and checks every file's
    /// size and SHA-256 and the store's integrity.
    static func check(_ backup: String) throws -> BackupManifest {
        let path = (backup as NSString).appendingPathComponent(BackupManifest.name)
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ValidationError("--from \(backup) has no \(BackupManifest.name): it is not a herald backup")
        }
        let bytes = (try? handle.read(upToCount: BackupManifest.maximumBytes + 1)) ?? Data()
        try? handle.close()
        let manifest: BackupManifest
        do { manifest = try BackupManifest.read(Array(bytes), source: path) } catch { throw ValidationError(error.description) }
        for file in manifest.files {
            let data: Data
            do { data = try BackupCommand.read((backup as NSString).appendingPathComponent(file.path)) } catch {
                throw ValidationError("the backup is incomplete: \(file.path) is missing")
            }
            guard data.count == file.bytes, Hex.encode(SHA256.hash(data: data)) == file.sha256 else {
                throw ValidationError("the backup is damaged: \(file.path) does not match its SHA-256 in \(BackupManifest.name)")
            }
        }
        let problems: [String]
        do { problems = try SQLiteBackup.integrityProblems(databaseAt: (backup as NSString).appendingPathComponent("herald.sqlite")) } catch {
            throw ValidationError("the backup's store: \(error)")
        }
        guard problems.isEmpty else { throw ValidationError("the backup's store fails its integrity check: \(problems.prefix(3).joined(separator: "; "))") }
        return manifest
    }
}

/// A file a command reads or writes that does not do (backup, restore, doctor), in words.
struct CommandFileError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

