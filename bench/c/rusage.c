// rusage: runs one command and writes its exact cost to a file, for bench/run.
//
//   rusage OUTFILE PROGRAM [ARG...]
//
// OUTFILE gets one line: "wall_ns utime_us stime_us maxrss_kib wait_status".
// Why not os.wait4 in Python: Linux carries the RSS high-water mark of the process
// image replaced by execve into the child's ru_maxrss, so a child forked from a
// 10 MiB Python reports at least 10 MiB. This launcher is tiny (as is GNU time),
// so the floor it adds is about 1 MiB, the same for every contender.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: rusage OUTFILE PROGRAM [ARG...]\n");
        return 64;
    }
    FILE *out = fopen(argv[1], "w");
    if (!out) {
        perror(argv[1]);
        return 74;
    }
    long long start = now_ns();
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 71;
    }
    if (pid == 0) {
        fclose(out);
        execvp(argv[2], argv + 2);
        fprintf(stderr, "rusage: cannot run %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            perror("wait4");
            return 71;
        }
    }
    long long wall = now_ns() - start;
    fprintf(out, "%lld %ld %ld %ld %d\n", wall,
            (long)ru.ru_utime.tv_sec * 1000000L + (long)ru.ru_utime.tv_usec,
            (long)ru.ru_stime.tv_sec * 1000000L + (long)ru.ru_stime.tv_usec,
            ru.ru_maxrss, status);
    fclose(out);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}
