/**
 * FFM bindings to libibverbs.so.1 and librdmacm.so.1, and nothing else: one class per C struct
 * (its layout and accessors, checked against the C headers by a test that compiles an offsetof
 * probe), {@code LibIbverbs} and {@code LibRdmacm} (downcall handles; the verbs that verbs.h makes
 * static inline are called through {@code ibv_context.ops} as the header does), and
 * {@code NativeLibraries} (loading them, or saying why not). Internal: not exported.
 */
package dev.jrdma.provider.verbs.ffi;
