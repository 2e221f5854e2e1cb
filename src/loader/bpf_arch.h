#ifndef CW_LOADER_BPF_ARCH_H
#define CW_LOADER_BPF_ARCH_H

#include <stddef.h>

/* The architecture this causeway was compiled for, in the words the BPF
 * objects' tag uses (src/bpf/args.bpf.h): "x86_64" or "aarch64". */
const char *cw_bpf_host_arch(void);

/* Reads the architecture tag (the cw_bpf_arch symbol's bytes) of the BPF
 * object elf[0..len) into arch. 0; -ENOEXEC when elf is not a BPF ELF
 * object (ELF machine EM_BPF); -ENOENT when it carries no tag. */
int cw_bpf_elf_arch(const void *elf, size_t len, char *arch, size_t cap);

/* Checks the tag of one object named name against cw_bpf_host_arch(). 0, or
 * -ENOEXEC with why saying which object was built for what. */
int cw_bpf_object_check(const char *name, const void *elf, size_t len, char *why, size_t whylen);

/* Checks every BPF object built into this binary; the loader calls it
 * before opening any. 0 or -ENOEXEC with why. */
int cw_bpf_objects_check(char *why, size_t whylen);

#endif
