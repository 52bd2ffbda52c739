import IO

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A pair of UDP sockets on consecutive ports, the even one for RTP and the next for RTCP
/// (RFC 3550 §11), as SETUP's `client_port` offers them. Their receive buffers are made
/// large (a camera's IDR arrives as a burst of packets).
struct UDPPorts {
    let rtp: Socket
    let rtcp: Socket
    let port: UInt16

    static let receiveBuffer: Int32 = 2 << 20

    static func open(family: Int32) throws(RTSPError) -> UDPPorts {
        var last = "no port pair free"
        for _ in 0..<32 {
            do throws(Errno) {
                let rtp = try bound(family: family, port: 0)
                guard let port = try rtp.localAddress().port, port % 2 == 0, port < UInt16.max else {
                    rtp.close()
                    continue
                }
                do throws(Errno) {
                    let rtcp = try bound(family: family, port: port + 1)
                    return UDPPorts(rtp: rtp, rtcp: rtcp, port: port)
                } catch {
                    rtp.close()
                    last = error.description
                }
            } catch { last = error.description }
        }
        throw RTSPError(.lost, "no UDP port pair for RTP and RTCP: \(last)")
    }

    private static func bound(family: Int32, port: UInt16) throws(Errno) -> Socket {
        let socket = Socket(adopting: try systemCall("socket") { Glibc.socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0) })
        try? socket.setOption(level: SOL_SOCKET, name: SO_RCVBUF, value: receiveBuffer)
        let any = family == AF_INET6 ? "::" : "0.0.0.0"
        do {
            guard let address = try SocketAddress.resolve(.tcp(host: any, port: port), passive: true).first else {
                throw Errno(code: EADDRNOTAVAIL, function: "bind")
            }
            try socket.bind(address)
        } catch let error as Errno {
            socket.close()
            throw error
        } catch {
            socket.close()
            throw Errno(code: EADDRNOTAVAIL, function: "bind")
        }
        return socket
    }
}
