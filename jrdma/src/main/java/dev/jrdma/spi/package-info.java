/**
 * The provider interface under the API, shaped like verbs: a {@code Provider} (found with
 * {@link java.util.ServiceLoader}, saying whether it can run here and why not) opens a
 * {@code Device}, which registers memory ({@code MemoryRegistration}), makes completion queues
 * and channels, queue pairs ({@code QueuePair}, posting work requests, reporting
 * {@code WorkCompletion}s) and a {@code ConnectionManager} (listen, connect, accept: rdma_cm's
 * part). Internal: not exported; the three providers of the module implement it.
 */
package dev.jrdma.spi;
