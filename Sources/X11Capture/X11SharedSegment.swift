import Capture
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CXCBShm

/// A System V shared memory segment that both we (`shmat`) and the X server
/// (`xcb_shm_attach`) have attached: `xcb_shm_get_image` writes the pixels straight into
/// it and frames point into `buffer`, with no copy.
///
/// The segment is marked for removal (`IPC_RMID`) as soon as both sides are attached, so
/// the kernel frees it when the last side detaches, even if we crash. `detach()` lets go
/// of the server side; the local mapping goes (`shmdt`) when the last frame that points
/// into it is released.
///
/// Not `Sendable`: capture thread only.
struct X11SharedSegment {
    let id: xcb_shm_seg_t
    var buffer: FrameBuffer?

    /// A segment of `byteCount` bytes attached on both sides; nil when the server cannot
    /// attach it (a remote display, another IPC namespace), with the reason in `why`.
    static func make(byteCount: Int, on connection: X11Connection, why: inout String) throws(X11Error) -> X11SharedSegment? {
        let shmid = shmget(CXCBShm_ipc_private(), byteCount, IPC_CREAT | 0o600)
        guard shmid >= 0 else { throw .system(function: "shmget(\(byteCount) bytes)", errno: errno) }
        let address = shmat(shmid, nil, 0)
        guard let address, CXCBShm_shmat_failed(address) == 0 else {
            let code = errno
            shmctl(shmid, IPC_RMID, nil)
            throw .system(function: "shmat", errno: code)
        }
        let id = xcb_generate_id(connection.handle)
        let error = xcb_request_check(connection.handle, xcb_shm_attach_checked(connection.handle, id, UInt32(shmid), 0))
        shmctl(shmid, IPC_RMID, nil)
        if let error {
            why = "the server cannot attach our segment (X error \(error.pointee.error_code))"
            free(error)
            shmdt(address)
            return nil
        }
        let buffer = FrameBuffer(wrapping: address.assumingMemoryBound(to: UInt8.self), capacity: byteCount) {
            shmdt(address)
        }
        return X11SharedSegment(id: id, buffer: buffer)
    }

    /// Detaches the server side (the corresponding C function is `xcb_shm_detach`) and
    /// drops our reference to the memory.
    mutating func detach(from connection: X11Connection) {
        xcb_shm_detach(connection.handle, id)
        xcb_flush(connection.handle)
        buffer = nil
    }

    /// True when no frame still points into the segment: it may be overwritten.
    mutating func isFree() -> Bool { isKnownUniquelyReferenced(&buffer) }
}
