/** An echo server and client with callbacks on a named device: the shape of a request/response service on jrdma. */
package dev.jrdma.examples.echo;
