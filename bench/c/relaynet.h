// relaynet.h: the two sockets of the relays in bench/c (relay.c, relaygop.c): the source they
// read, connected on 127.0.0.1:SRC_PORT, and the socket their readers connect to, listening
// on 127.0.0.1:PORT (0: any free port), announced on stderr as nalcast announces its own
// ("serving tcp://127.0.0.1:PORT").
#ifndef RELAYNET_H
#define RELAYNET_H
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

// Connects *src and opens *lfd; 0, or 69 after a line on stderr naming `name`.
static int relay_sockets(const char *name, const char *src_port, const char *port, int *src, int *lfd) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    *src = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_port = htons((uint16_t)atoi(src_port));
    if (connect(*src, (struct sockaddr *)&a, sizeof a) < 0) {
        fprintf(stderr, "%s: connect to the source: ", name);
        perror(NULL);
        return 69;
    }
    *lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(*lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    a.sin_port = htons((uint16_t)atoi(port));
    socklen_t al = sizeof a;
    if (bind(*lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(*lfd, 64) < 0 ||
        getsockname(*lfd, (struct sockaddr *)&a, &al) < 0) {
        fprintf(stderr, "%s: listen: ", name);
        perror(NULL);
        return 69;
    }
    fprintf(stderr, "serving tcp://127.0.0.1:%d\n", ntohs(a.sin_port));
    return 0;
}
#endif
