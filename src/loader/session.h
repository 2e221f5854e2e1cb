/* session: facts about the host and the traced processes that trace
 * stores with a session: host name, kernel, GPU, driver/CUDA/Python
 * versions, and per process its command line and distributed rank. */
#ifndef CW_LOADER_SESSION_H
#define CW_LOADER_SESSION_H

#include <stddef.h>
#include <stdint.h>

struct cw_host_facts {
	char host[256];
	char kernel[128];
	char gpu[128];    /* "" when no NVIDIA GPU is visible */
	char driver[64];  /* NVIDIA kernel driver, or libcuda's file version */
};

void cw_host_facts_read(struct cw_host_facts *f);

/* Ranks from the environment the launcher gave the process: torchrun
 * (RANK, LOCAL_RANK, WORLD_SIZE), Slurm (SLURM_PROCID, SLURM_LOCALID,
 * SLURM_NTASKS) and Open MPI (OMPI_COMM_WORLD_*). The read of
 * /proc/PID/environ is capped; unknown values are -1. Returns 0 or -errno. */
int cw_proc_ranks(uint32_t pid, int *rank, int *local_rank, int *world_size);
/* Same, from an environ block (NUL-separated), for tests. */
void cw_environ_ranks(const char *env, size_t len, int *rank, int *local_rank, int *world_size);

/* comm, command line (arguments joined by spaces, capped), parent pid. */
int cw_proc_identity(uint32_t pid, char *comm, size_t commlen, char *cmdline, size_t cmdlen, uint32_t *ppid);

/* "3.12" when the process runs CPython (libpython3.X or a python3.X
 * executable in its maps), else -ENOENT. */
int cw_proc_python_version(uint32_t pid, char *buf, size_t len);

#endif
