package dev.jrdma.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** A connection was released: every operation it had has completed. */
@Name("dev.jrdma.ConnectionClosed")
@Label("Connection Closed")
@Category({"jrdma"})
@Description("A connection was released: every operation it had has completed.")
final class ConnectionClosedEvent extends Event {
    @Label("Remote Address")
    String remoteAddress;
    @Label("Provider")
    String provider;
    @Label("Reason")
    String reason;
    @Label("Operations Completed")
    long operationsCompleted;
    @Label("Operations Failed")
    long operationsFailed;
}
