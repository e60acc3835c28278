/* Helpers of the HTTP server's unit tests: a client on the loopback that
 * sends one request and reads the answer until the server closes, and a
 * sleep in milliseconds. */
#ifndef VT_TEST_HTTP_TESTUTIL_H
#define VT_TEST_HTTP_TESTUTIL_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static inline void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Sends `head` to 127.0.0.1:port, reads until EOF into buf (at most cap - 1
 * bytes, NUL-terminated); returns the bytes read, 0 when it cannot connect. */
static inline size_t exchange(int port, const char *head, char *buf, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    size_t n = strlen(head);
    if (write(fd, head, n) != (ssize_t)n) {
        close(fd);
        return 0;
    }
    size_t got = 0;
    ssize_t r;
    while (got + 1 < cap && (r = read(fd, buf + got, cap - 1 - got)) > 0)
        got += (size_t)r;
    buf[got] = '\0';
    close(fd);
    return got;
}

/* GET path with Connection: close; the bytes read until EOF, as exchange. */
static inline size_t fetch(int port, const char *path, char *buf, size_t cap)
{
    char req[256];
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", path);
    return exchange(port, req, buf, cap);
}

#endif
