/**
 * The {@code shm} provider: tcp plus direct access between processes of one host. Registered
 * memory lives in sealed memfds that a proven peer of the same user maps ({@code ShmMemory});
 * one-sided operations are then copies and CPU atomics on the mapping, with no CPU of the
 * target, and messages go through a shared byte ring per direction ({@code SharedByteRing},
 * {@code ShmLink}). The proof of the same host and user is an abstract Unix socket with
 * SO_PEERCRED and SCM_RIGHTS ({@code ShmRendezvous}, {@code ShmChannel}). Internal: not exported.
 */
package dev.jrdma.provider.shm;
