/*
 * A measuring aid for the bench's Spin stage, never shipped: preloaded into `spin up`
 * (LD_PRELOAD), it sets TCP_NODELAY on every socket the process accepts, which Spin's HTTP
 * server does not (Spin 4.0.2 and 4.1). The bench measures Spin with and without it, so its
 * table says how much of a Spin row is the app's work and how much the stall that Nagle's
 * algorithm and the client's delayed ACK put on a response whose head and body left in two
 * writes (docs/architecture.md, "Nagle and the delayed ACK, again, on WASIp3").
 *
 * Built by `cargo xtask bench` with the C compiler Rust already links with:
 *   cc -shared -fPIC -O2 -o nodelay.so nodelay.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

static void no_delay(int fd) {
    if (fd >= 0) {
        int one = 1;
        /* A socket that is not TCP (a Unix socket) refuses it; nothing to do then. */
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
}

int accept4(int socket, struct sockaddr *address, socklen_t *length, int flags) {
    static int (*real)(int, struct sockaddr *, socklen_t *, int);
    if (!real) {
        real = (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(RTLD_NEXT, "accept4");
    }
    int fd = real(socket, address, length, flags);
    no_delay(fd);
    return fd;
}

int accept(int socket, struct sockaddr *address, socklen_t *length) {
    static int (*real)(int, struct sockaddr *, socklen_t *);
    if (!real) {
        real = (int (*)(int, struct sockaddr *, socklen_t *))dlsym(RTLD_NEXT, "accept");
    }
    int fd = real(socket, address, length);
    no_delay(fd);
    return fd;
}
