/**
 * Provider selection: which provider an {@code Rdma} runs on and the device it opens there
 * ({@code ProviderSelection}), with the reason it gives ({@code Rdma.providerChoice()}). Called
 * once, by the thread that builds the {@code Rdma}; it keeps no state. Internal: not exported.
 */
package dev.jrdma.engine.select;
