/* Who answers on the NCCL RAS port (docs/nccl.md "Who answered"): any
 * local user can bind 127.0.0.1:28028 before NCCL does, so an answer is
 * NCCL's only when the listening socket it came through is held by one of
 * the traced job's ranks: its inode, from /proc/net/tcp{,6} (the listener
 * on the address connected to, the exact address before a wildcard, as
 * the kernel picks), found among the ranks' /proc/PID/fd links
 * ("socket:[INODE]"). And where the ranks say where RAS listens
 * (NCCL_RAS_ADDR, NCCL_RAS_ENABLE in /proc/PID/environ, read bounded),
 * that is where it is asked. */
#ifndef CW_TRACE_RAS_SOURCE_H
#define CW_TRACE_RAS_SOURCE_H

#include <stddef.h>
#include <stdint.h>

/* 1 when the listener behind the connected socket fd is held by one of
 * pids[0..npids), 0 when not (why says what was found), -errno when fd
 * says nothing. net_dir: "" for /proc/self/net (tests: a folder with tcp
 * and tcp6 files). */
int trace_ras_source_check(int fd, const uint32_t *pids, int npids, const char *proc_root, char *why, size_t wlen);

/* From the environment of pid (proc_root "" for /proc): *enabled 0 when
 * NCCL_RAS_ENABLE=0, host and *port from NCCL_RAS_ADDR ("HOST:PORT"),
 * left as they are when it is absent. Returns 0, or -errno when the
 * environment cannot be read. */
int trace_ras_source_env(uint32_t pid, const char *proc_root, int *enabled, char *host, size_t hlen, int *port);

#endif
