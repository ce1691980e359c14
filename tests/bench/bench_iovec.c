/*
 * bench_iovec.c — what the kernel charges a sender per iovec: messages of
 * a fixed size sent over a loopback TCP connection with sendmsg, each
 * message cut into the given runs, the runs of all messages scattered in
 * memory as a router's output is (each in its own 1 KiB slot).
 *
 * Usage: bench_iovec RUN_OCTETS... (at most 8 runs a message), e.g.
 *   bench_iovec 32 82 153     a message as an ingress router sent it
 *   bench_iovec 114 153       the same with the short runs copied in
 *   bench_iovec 267           the same message as one run
 * Each sendmsg carries 235 messages (about what one write of a two-hop
 * run holds); 3 GB in all go out. A thread of the same process reads the
 * other end. Prints the sender thread's system time per message
 * (getrusage RUSAGE_THREAD): the copy into socket buffers and the
 * loopback receive path the send runs, not the reader's copy out. Used
 * for docs/performance.md ("Short runs copied into the output"); not run
 * by the tests.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_RUNS 8
#define PER_CALL 235
#define SLOT 1024
#define TOTAL 3000000000LL

/* The reading end: reads and drops until end of stream. */
static void *reader(void *arg)
{
    int fd = *(const int *)arg;
    static char buf[65536];
    while (read(fd, buf, sizeof buf) > 0)
        ;
    return NULL;
}

static double thread_sys_s(void)
{
    struct rusage r;
    getrusage(RUSAGE_THREAD, &r);
    return (double)r.ru_stime.tv_sec + (double)r.ru_stime.tv_usec / 1e6;
}

/* A connected pair on 127.0.0.1 (an ephemeral port): *out the sending
 * end, *in the accepted one. Returns 0 or -1. */
static int loopback_pair(int *out, int *in)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &alen) != 0)
        return -1;
    *out = socket(AF_INET, SOCK_STREAM, 0);
    if (*out < 0 || connect(*out, (struct sockaddr *)&a, sizeof a) != 0)
        return -1;
    *in = accept(l, NULL, NULL);
    close(l);
    return *in < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
    size_t runs[MAX_RUNS], msg = 0;
    int nruns = argc - 1;
    if (nruns < 1 || nruns > MAX_RUNS) {
        fprintf(stderr, "usage: bench_iovec RUN_OCTETS... (1 to %d runs)\n", MAX_RUNS);
        return 2;
    }
    for (int i = 0; i < nruns; i++) {
        long v = strtol(argv[i + 1], NULL, 10);
        if (v < 1 || v > SLOT) {
            fprintf(stderr, "bench_iovec: a run is 1 to %d octets: %s\n", SLOT, argv[i + 1]);
            return 2;
        }
        runs[i] = (size_t)v;
        msg += runs[i];
    }
    int out, in;
    if (loopback_pair(&out, &in) != 0) {
        perror("bench_iovec: loopback connection");
        return 1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, reader, &in) != 0)
        return 1;
    size_t niov = (size_t)PER_CALL * (size_t)nruns;
    uint8_t *mem = malloc(niov * SLOT);
    struct iovec *iov = calloc(niov, sizeof *iov);
    if (!mem || !iov)
        return 1;
    memset(mem, 0x5a, niov * SLOT);
    for (size_t i = 0; i < niov; i++)
        iov[i] = (struct iovec){.iov_base = mem + i * SLOT, .iov_len = runs[i % (size_t)nruns]};
    double sys0 = thread_sys_s();
    long long sent = 0;
    while (sent < TOTAL) {
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = niov};
        ssize_t n = sendmsg(out, &mh, 0); /* blocking: a short send is rare, and counted */
        if (n <= 0) {
            perror("bench_iovec: sendmsg");
            return 1;
        }
        sent += n;
    }
    double sys = thread_sys_s() - sys0;
    printf("| %d runs, %zu octets a message | %.1f ns of sender system time a message |\n", nruns,
           msg, sys * 1e9 / ((double)sent / (double)msg));
    shutdown(out, SHUT_WR);
    pthread_join(t, NULL);
    free(iov);
    free(mem);
    close(out);
    close(in);
    return 0;
}
