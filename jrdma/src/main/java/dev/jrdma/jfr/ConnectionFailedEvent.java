package dev.jrdma.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** A connection failed: connecting did not succeed, or an established one went to error. */
@Name("dev.jrdma.ConnectionFailed")
@Label("Connection Failed")
@Category({"jrdma"})
@Description("A connection failed: connecting did not succeed, or an established one went to error.")
final class ConnectionFailedEvent extends Event {
    @Label("Remote Address")
    String remoteAddress;
    @Label("Provider")
    String provider;
    @Label("While Connecting")
    boolean whileConnecting;
    @Label("Exception")
    String exception;
    @Label("Message")
    String message;
}
