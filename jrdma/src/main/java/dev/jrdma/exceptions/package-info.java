/**
 * What can go wrong, by type: every failure jrdma reports is an
 * {@link dev.jrdma.exceptions.RdmaException} (unchecked) whose message names what was wrong.
 * A provider that cannot run here ({@link dev.jrdma.exceptions.ProviderUnavailableException}:
 * what is missing and how to get it), a capability the device lacks
 * ({@link dev.jrdma.exceptions.UnsupportedCapabilityException}), a failed native call
 * ({@link dev.jrdma.exceptions.NativeRdmaException}: function, errno and strerror), an operation
 * that completed in error ({@link dev.jrdma.exceptions.WorkCompletionException}, with the work
 * completion status; {@link dev.jrdma.exceptions.RemoteAccessException} for a refused remote
 * access), a connection that ended or was refused, and a timeout.
 *
 * <p>The bottom of the layering: every other package throws these, this one uses none.
 */
package dev.jrdma.exceptions;
