/**
 * The IO threads: an {@code IoThread} polls its completion queues and connection events and
 * runs callbacks, waiting as its {@code IdleWait} says when there is nothing (spin, sleep, or
 * spin then sleep: what the API's {@code CompletionMode} maps to), pinned to a CPU when asked.
 * An {@code Rdma} in INLINE mode has one without a thread: the application polls.
 *
 * <p>An IO thread's sources, tasks and timers are its own (no locks among them); other threads
 * reach it only through {@code execute} (a task queue) and {@code wake(Source)} (a source that
 * rested, {@code Source.rest}, has work again: a queue of woken sources, taken back into the
 * passes at the next one). A source at rest is not polled, so a pass costs O(sources with work).
 * Internal: not exported.
 */
package dev.jrdma.runtime;
