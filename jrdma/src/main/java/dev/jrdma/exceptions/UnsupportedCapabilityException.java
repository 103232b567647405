package dev.jrdma.exceptions;

/** The device (or the peer) lacks a capability an operation needs. Names both. */
public class UnsupportedCapabilityException extends RdmaException {
    private static final long serialVersionUID = 1L;

    private final String capability;
    private final String device;

    public UnsupportedCapabilityException(String capability, String device, String detail) {
        super("'" + capability + "' is not supported by " + device + (detail == null ? "" : ": " + detail));
        this.capability = capability;
        this.device = device;
    }

    public String capability() {
        return capability;
    }

    public String device() {
        return device;
    }
}
