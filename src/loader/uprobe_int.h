/* What uprobe_attach.c and cuda_maps.c share: the probes' state. */
#ifndef CW_LOADER_UPROBE_INT_H
#define CW_LOADER_UPROBE_INT_H

#include "cuda.skel.h"
#include "loader/uprobe_attach.h"

struct attached_file {
	uint64_t dev, ino;
};

struct cw_cuda_probes {
	struct cuda_bpf *skel;
	const char *object; /* which build of cuda.bpf.c: "cuda", "cuda_sessctx", "cuda_noloop" */
	int multi;         /* uprobe_multi links available */
	int session;       /* uprobe session links (cw_call_session) available */
	int sleepable;     /* cw_register_function (uprobe.s) loaded */
	int *mfds;         /* uprobe_multi link fds */
	size_t nmfds, mfds_alloc;
	struct bpf_link **links;
	size_t nlinks, links_alloc;
	struct attached_file *files;
	size_t nfiles, files_alloc;
	int npairs;
	unsigned fold_max; /* fold_hist's entries */
	unsigned fold_nslots; /* fold_slots' entries, a power of two */
	struct cw_call_slot *slots; /* call_slots, mapped */
	struct cw_fold_slot *fold_slots; /* fold_slots, mapped */
	struct bpf_link *exit_link; /* cw_thread_exit */
};

/* call_slots is an mmapable array: its elements lie value after value. */
#define CALL_SLOTS_BYTES (sizeof(struct cw_call_slot) * CW_CALL_SLOTS)
#define FOLD_SLOTS_BYTES(cp) (sizeof(struct cw_fold_slot) * (cp)->fold_nslots)

#endif
