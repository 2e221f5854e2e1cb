/* C++ symbol demangling through libstdc++'s __cxa_demangle (the same
 * demangler gdb and perf use), so causeway shows
 * "ns::Model::forward(int)" rather than "_ZN2ns5Model7forwardEi". */
#ifndef CW_SYMBOL_DEMANGLE_H
#define CW_SYMBOL_DEMANGLE_H

#include <stddef.h>

/* Writes the demangled name into buf (truncated), or the name unchanged
 * when it is not a mangled C++ name. Returns 1 when demangled, else 0. */
int cw_demangle(const char *name, char *buf, size_t len);

#endif
