package dev.jrdma.exceptions;

/** The device (or the peer) lacks a capability an operation needs. Names both. */
public class UnsupportedCapabilityException extends RdmaException {
    private static final long serialVersionUID = 1L;

    /** The capability that is missing. */
    private final String capability;
    /** The device (or peer) that lacks it. */
    private final String device;

    /**
     * {@code device} lacks {@code capability}; {@code detail} (may be null) says more, such as the
     * capability bit.
     *
     * @param capability the capability that is missing
     * @param device the device (or peer) that lacks it
     * @param detail more about it, such as the capability bit (may be null)
     */
    public UnsupportedCapabilityException(String capability, String device, String detail) {
        super("'" + capability + "' is not supported by " + device + (detail == null ? "" : ": " + detail));
        this.capability = capability;
        this.device = device;
    }

    /**
     * {@return the capability that is missing, for example {@code masked atomics} or {@code
     * IBV_ODP_SUPPORT}}
     */
    public String capability() {
        return capability;
    }

    /** {@return the device (or peer) that lacks it} */
    public String device() {
        return device;
    }
}
