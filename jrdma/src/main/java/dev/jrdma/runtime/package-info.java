/**
 * The IO loops, in Agrona's parts: a {@code DutyCycle} (one pass: the tasks handed over, the
 * sources woken, every source not at rest; the timers), who runs its passes ({@code ThreadRunner}:
 * a thread of its own, pinned to a CPU when asked, idling as its {@code IdleStrategy} says: spin,
 * yield, sleep, spin then sleep, or back off (spin, yield, sleep), what the API's
 * {@code IdleStrategy} or {@code CompletionMode} maps to through {@code IdleWait};
 * {@code CallerInvoker}: no thread, the caller's passes, inline, confined to one owner, or driven
 * by another framework's event loop), and a {@code WakeUp} (an eventfd and the poll(2) sleep on it
 * and the sources' event fds). {@code IoThread} is their face.
 *
 * <p>Who may touch what: a loop's sources, timers and tasks are its owner's (its thread; inline,
 * the thread in a pass), so they need no locks among themselves. Other threads reach it only
 * through {@code IoThread.execute} and {@code IoThread.wake(Source)}:
 * <pre>
 *   any thread ──execute(task)──▶ HandOffQueue (ring, overflow) ─┐
 *   any thread ──wake(source)───▶ HandOffQueue ──────────────────┼─▶ DutyCycle.pass (owner) ──▶ sources
 *                       └── WakeUp.signalIfAsleep (eventfd, only while it sleeps)
 * </pre>
 * A source at rest ({@code Source.rest}) is not polled, so a pass costs O(sources with work).
 * Internal: not exported.
 */
package dev.jrdma.runtime;
