/**
 * The IO threads: an {@code IoThread} polls its completion queues and connection events and
 * runs callbacks, waiting as its {@code IdleWait} says when there is nothing (spin, sleep, or
 * spin then sleep: what the API's {@code CompletionMode} maps to), pinned to a CPU when asked.
 * An {@code Rdma} in INLINE mode has one without a thread: the application polls. Internal: not
 * exported.
 */
package dev.jrdma.runtime;
