/**
 * The operating system, through FFM downcalls to libc: errno and its names, sockets and epoll,
 * abstract Unix sockets with SO_PEERCRED and SCM_RIGHTS, eventfd, sealed memfds and mmap, CPU
 * affinity, and the C struct layouts they need. Internal: not exported.
 *
 * <p>Every failing call becomes a {@link dev.jrdma.exceptions.NativeRdmaException} naming the
 * function and the errno; {@code NativeCalls} holds the one place where a downcall's checked
 * throwable is rethrown.
 */
package dev.jrdma.os;
