/*
 * healthcheck: the image's HEALTHCHECK. The image has no shell and no curl, so this tiny program
 * does one HTTP GET /healthz on 127.0.0.1 and exits 0 on a 200 answer, 1 otherwise.
 * Usage: healthcheck [port...]   (default: 9000 then 9001, the probe's and the collector's ports;
 * healthy when any of them answers 200). 2 s deadline per port. Build: cc -O2 -s -o healthcheck healthcheck.c
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static int check(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  struct timeval tv = {2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int ok = 0;
  if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
    const char req[] = "GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1)) {
      char buf[64];
      size_t n = 0;
      ssize_t r;
      while (n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0) n += (size_t)r;
      buf[n] = 0;
      ok = strncmp(buf, "HTTP/1.", 7) == 0 && strncmp(buf + 8, " 200", 4) == 0;
    }
  }
  close(fd);
  return ok;
}

int main(int argc, char **argv) {
  if (argc < 2) return check(9000) || check(9001) ? 0 : 1;
  for (int i = 1; i < argc; i++) {
    int port = atoi(argv[i]);
    if (port > 0 && port < 65536 && check(port)) return 0;
  }
  fprintf(stderr, "healthcheck: no 200 from GET /healthz\n");
  return 1;
}
