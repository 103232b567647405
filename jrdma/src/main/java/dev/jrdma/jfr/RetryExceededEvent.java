package dev.jrdma.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** An operation failed because its retries ran out: the peer did not answer (transport), or had no receive posted (RNR). */
@Name("dev.jrdma.RetryExceeded")
@Label("Retry Exceeded")
@Category({"jrdma"})
@Description("An operation failed because its retries ran out: the peer did not answer (transport), or had no receive posted (RNR).")
final class RetryExceededEvent extends Event {
    @Label("Remote Address")
    String remoteAddress;
    @Label("Operation")
    String operation;
    @Label("Kind")
    @Description("transport (IBV_WC_RETRY_EXC_ERR) or RNR (IBV_WC_RNR_RETRY_EXC_ERR)")
    String kind;
    @Label("Retry Budget")
    @Description("The retry count the connection was configured with")
    int retries;
}
