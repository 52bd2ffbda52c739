// rusage: runs one command and writes its exact cost to a file, for bench/run.
//
//   rusage [-t SECONDS] OUTFILE PROGRAM [ARG...]
//
// -t: a live program that runs until stopped (a screen grabber) gets SIGINT after
// SECONDS, as a user pressing Ctrl-C would stop it (FFmpeg and GStreamer's -e finish
// their output then), and SIGKILL 10 s later if it is still there. The status written
// is the program's own; the caller decides which exit of a stopped program is clean
// (FFmpeg exits 255 when interrupted).
// OUTFILE gets one line: "wall_ns utime_us stime_us maxrss_kib wait_status".
// Why not os.wait4 in Python: Linux carries the RSS high-water mark of the process
// image replaced by execve into the child's ru_maxrss, so a child forked from a
// 10 MiB Python reports at least 10 MiB. This launcher is tiny (as is GNU time),
// so the floor it adds is about 1 MiB, the same for every contender.
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static volatile sig_atomic_t alarmed;

static void on_alarm(int sig) {
    (void)sig;
    alarmed = 1;
}

int main(int argc, char **argv) {
    double limit_s = 0;
    if (argc > 2 && strcmp(argv[1], "-t") == 0) {
        limit_s = atof(argv[2]);
        argv += 2;
        argc -= 2;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: rusage [-t SECONDS] OUTFILE PROGRAM [ARG...]\n");
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
    if (limit_s > 0) {
        // no SA_RESTART: the alarm interrupts wait4 below
        struct sigaction sa = {0};
        sa.sa_handler = on_alarm;
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval it = {{0, 0}, {(long)limit_s, (long)((limit_s - (long)limit_s) * 1e6)}};
        setitimer(ITIMER_REAL, &it, NULL);
    }
    int status = 0, signals_sent = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            perror("wait4");
            return 71;
        }
        if (alarmed) {
            alarmed = 0;
            kill(pid, signals_sent++ == 0 ? SIGINT : SIGKILL);
            if (signals_sent == 1) alarm(10);
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
