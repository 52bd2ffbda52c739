import Clocks
import IO

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One RTSP session's sockets, blocking with deadlines on the reader's thread: the TCP
/// connection (requests, responses, interleaved RTP and RTCP) and, with UDP transport, a
/// socket pair per track. Every wait polls the stop signal too. Owned by one thread.
final class RTSPConnection {
    /// One UDP socket's packets, told apart by the channel numbers interleaving would use
    /// (a track's RTP on an even channel, its RTCP on the next).
    struct Datagrams {
        let socket: Socket
        let channel: UInt8
        /// The server's address and port for it (from SETUP's Transport), where receiver
        /// reports go.
        var peer: SocketAddress?
    }

    enum Item {
        case message(RTSPMessage)
        case packet(channel: UInt8, bytes: [UInt8])
    }

    let socket: Socket
    let peer: SocketAddress
    private let stop: RTSPStopSignal
    private var parser = RTSPStreamParser()
    var datagrams: [Datagrams] = []
    private var readBuffer = [UInt8](repeating: 0, count: 64 << 10)
    private var nextDatagram = 0

    /// Connects to `host:port` within `timeout` seconds (each address in turn).
    init(host: String, port: UInt16, timeout: Double, stop: RTSPStopSignal) throws(RTSPError) {
        self.stop = stop
        let addresses: [SocketAddress]
        do { addresses = try SocketAddress.resolve(.tcp(host: host, port: port)) } catch {
            throw RTSPError(.lost, "cannot resolve \(host): \(error)")
        }
        let deadline = MonotonicClock.seconds + timeout
        var last = "no address"
        for address in addresses {
            do throws(Errno) {
                let socket = try Socket(family: address.family)
                if try !socket.connect(to: address) {
                    guard try Self.wait([socket.fd], stop, POLLOUT, until: deadline) == 0 else {
                        throw stop.isSignalled ? Errno(code: ECANCELED, function: "connect") : Errno(code: ETIMEDOUT, function: "connect")
                    }
                    if let error = try socket.pendingError() { throw error }
                }
                try? socket.setOption(level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: 1)
                self.socket = socket
                self.peer = address
                return
            } catch {
                if error.code == ECANCELED { throw RTSPError(.stopped, "stopped") }
                last = error.description
                if error.code == ETIMEDOUT { break }
            }
        }
        throw RTSPError(.lost, last)
    }

    deinit {
        socket.close()
        for d in datagrams { d.socket.close() }
    }

    /// Writes all of `bytes` before `deadline`; `stoppable: false` for the TEARDOWN a stop
    /// sends, which the stop signal must not cut short.
    func write(_ bytes: [UInt8], until deadline: Double, stoppable: Bool = true) throws(RTSPError) {
        var at = 0
        while at < bytes.count {
            let result = bytes[at...].withUnsafeBytes { b in Result { () throws(Errno) -> Int? in try socket.write(b) } }
            let n: Int?
            switch result {
            case .success(let written): n = written
            case .failure(let error): throw RTSPError(.lost, "the connection failed: \(error)")
            }
            if let n { at += n; continue }
            let ready: Int
            do { ready = try Self.wait([socket.fd], stoppable ? stop : nil, POLLOUT, until: deadline) } catch { throw RTSPError(.lost, "\(error)") }
            if ready < 0 {
                throw stoppable && stop.isSignalled ? RTSPError(.stopped, "stopped") : RTSPError(.timedOut, "the server took no request for too long")
            }
        }
    }

    /// Sends one datagram to the server's port for `channel` (an RTCP receiver report).
    func sendDatagram(_ bytes: [UInt8], channel: UInt8) {
        guard let d = datagrams.first(where: { $0.channel == channel }), let peer = d.peer else { return }
        // A report the socket refuses now is made up for by the next one: RTCP repeats itself.
        _ = bytes.withUnsafeBytes { d.socket.send(datagram: $0, to: peer) }
    }

    /// The next message or packet, nil when `deadline` passed first; `stoppable: false` for
    /// the wait for a TEARDOWN's answer, which the stop signal must not cut short.
    func next(until deadline: Double, stoppable: Bool = true) throws(RTSPError) -> Item? {
        while true {
            if let item = try parsed() { return item }
            if let packet = readDatagram() { return packet }
            let fds = [socket.fd] + datagrams.map(\.socket.fd)
            let ready: Int
            do { ready = try Self.wait(fds, stoppable ? stop : nil, POLLIN, until: deadline) } catch { throw RTSPError(.lost, "\(error)") }
            if ready < 0 {
                if stoppable && stop.isSignalled { throw RTSPError(.stopped, "stopped") }
                return nil
            }
            if ready == 0 { try readStream() }
        }
    }

    private func parsed() throws(RTSPError) -> Item? {
        do throws(RTSPStreamParser.ParseError) {
            switch try parser.next() {
            case .message(let m)?: return .message(m)
            case .interleaved(let channel, let bytes)?: return .packet(channel: channel, bytes: bytes)
            case nil: return nil
            }
        } catch { throw RTSPError(.lost, "the server's RTSP is unreadable: \(error)") }
    }

    private func readStream() throws(RTSPError) {
        let result = readBuffer.withUnsafeMutableBytes { b in Result { () throws(Errno) -> Int? in try socket.read(into: b) } }
        let n: Int?
        switch result {
        case .success(let read): n = read
        case .failure(let error): throw RTSPError(.lost, "the connection failed: \(error)")
        }
        guard let n else { return }
        if n == 0 { throw RTSPError(.lost, "the server closed the connection") }
        readBuffer.withUnsafeBytes { parser.feed(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
    }

    /// A datagram waiting on any UDP socket, taken in turn so that none starves.
    private func readDatagram() -> Item? {
        guard !datagrams.isEmpty else { return nil }
        for i in 0..<datagrams.count {
            let d = datagrams[(nextDatagram + i) % datagrams.count]
            let n = readBuffer.withUnsafeMutableBytes { recv(d.socket.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                nextDatagram = (nextDatagram + i + 1) % datagrams.count
                return .packet(channel: d.channel, bytes: Array(readBuffer[0..<n]))
            }
        }
        return nil
    }

    /// Polls `fds` and the stop signal (when given): the index of the first ready descriptor
    /// (0 is `fds[0]`, any UDP socket counts as 1), or -1 when the deadline passed or stop was
    /// signalled.
    static func wait(_ fds: [Int32], _ stop: RTSPStopSignal?, _ events: Int32, until deadline: Double) throws(Errno) -> Int {
        var pfds = fds.map { pollfd(fd: $0, events: Int16(events), revents: 0) }
        // Without a stop signal, a descriptor that never becomes ready (-1 is ignored by poll).
        pfds.append(pollfd(fd: stop?.readFD ?? -1, events: Int16(POLLIN), revents: 0))
        while true {
            let left = max(0, deadline - MonotonicClock.seconds)
            let rc = poll(&pfds, nfds_t(pfds.count), Int32(min(Double(Int32.max), (left * 1000).rounded(.up))))
            if rc < 0 && errno == EINTR { continue }
            if rc < 0 { throw Errno(code: errno, function: "poll") }
            if rc == 0 || pfds.last!.revents != 0 { return -1 }
            if pfds[0].revents != 0 { return 0 }
            return 1
        }
    }
}
