#ifndef CAVFORMAT_SHIM_H
#define CAVFORMAT_SHIM_H
// FFmpeg's muxers (libavformat) for nalcast's container output, over a file descriptor
// nalcast opened itself: no libavformat protocol is used, only the muxers.
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavutil/error.h>
#include <libavutil/mem.h>

// The state behind an AVIOContext that writes to our own fd: the C callbacks below need a
// plain struct as their opaque pointer, and keep the errno of a failed call for our message.
typedef struct CAVFormat_fd_io {
    int fd;
    int error;        // errno of the first failed write or seek, 0 while all is well
    int64_t written;  // bytes handed to write(2) so far
} CAVFormat_fd_io;

// AVIOContext's write callback is a C function pointer: write(2) all of it, EINTR retried.
static inline int CAVFormat_fd_write(void *opaque, uint8_t *buf, int size) {
    CAVFormat_fd_io *io = (CAVFormat_fd_io *)opaque;
    if (io->error) return AVERROR(io->error);
    int done = 0;
    while (done < size) {
        ssize_t n = write(io->fd, buf + done, (size_t)(size - done));
        if (n < 0) {
            if (errno == EINTR) continue;
            io->error = errno;
            return AVERROR(io->error);
        }
        done += (int)n;
        io->written += n;
    }
    return size;
}

// AVIOContext's seek callback, C too; AVSEEK_SIZE (a macro) asks for the file's size.
static inline int64_t CAVFormat_fd_seek(void *opaque, int64_t offset, int whence) {
    CAVFormat_fd_io *io = (CAVFormat_fd_io *)opaque;
    if (whence & AVSEEK_SIZE) {
        struct stat st;
        return fstat(io->fd, &st) == 0 ? (int64_t)st.st_size : AVERROR(errno);
    }
    off_t at = lseek(io->fd, (off_t)offset, whence & ~AVSEEK_FORCE);
    if (at < 0) {
        io->error = errno;
        return AVERROR(io->error);
    }
    return (int64_t)at;
}

// True for a regular file, the only output an MP4 muxer can go back into (moov, mdat size).
static inline int CAVFormat_fd_is_seekable(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && lseek(fd, 0, SEEK_CUR) >= 0;
}

// avio_alloc_context wants an av_malloc'ed buffer and the two callbacks above; Swift cannot
// name C functions as pointers as simply, so the whole set-up is here.
static inline AVIOContext *CAVFormat_fd_avio(CAVFormat_fd_io *io, int seekable) {
    const int size = 64 * 1024;
    unsigned char *buffer = (unsigned char *)av_malloc(size);
    if (!buffer) return NULL;
    AVIOContext *pb = avio_alloc_context(buffer, size, 1, io, NULL, CAVFormat_fd_write, seekable ? CAVFormat_fd_seek : NULL);
    if (!pb) {
        av_free(buffer);
        return NULL;
    }
    pb->seekable = seekable ? AVIO_SEEKABLE_NORMAL : 0;
    return pb;
}

// The buffer is ours to free (av_freep through a field), then the context.
static inline void CAVFormat_avio_free(AVIOContext **pb) {
    if (!pb || !*pb) return;
    av_freep(&(*pb)->buffer);
    avio_context_free(pb);
}

// Extradata must come from av_malloc with AV_INPUT_BUFFER_PADDING_SIZE zeroed bytes after it.
static inline int CAVFormat_set_extradata(AVCodecParameters *par, const uint8_t *data, int size) {
    uint8_t *copy = (uint8_t *)av_mallocz((size_t)size + AV_INPUT_BUFFER_PADDING_SIZE);
    if (!copy) return AVERROR(ENOMEM);
    memcpy(copy, data, (size_t)size);
    av_freep(&par->extradata);
    par->extradata = copy;
    par->extradata_size = size;
    return 0;
}

// AV_INPUT_BUFFER_PADDING_SIZE is a macro: packet buffers need that many zeros at their end.
static inline int CAVFormat_padding_size(void) { return AV_INPUT_BUFFER_PADDING_SIZE; }

// av_strerror into a buffer; AVERROR(EPIPE) and friends are macros Swift does not import.
static inline int CAVFormat_errno_of(int averror) { return averror < 0 && averror > -4096 ? -averror : 0; }

#endif
