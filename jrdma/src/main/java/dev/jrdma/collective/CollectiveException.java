package dev.jrdma.collective;

import dev.jrdma.exceptions.RdmaException;

/**
 * A collective failed because of one member: it died, its connection failed, it did not answer
 * in time, or what it sent did not fit. {@link #rank()} names that member; the message says
 * which collective (its name and number in the group) and what happened.
 */
public class CollectiveException extends RdmaException {
    private final int rank;

    public CollectiveException(int rank, String message) {
        this(rank, message, null);
    }

    public CollectiveException(int rank, String message, Throwable cause) {
        super(message, cause);
        this.rank = rank;
    }

    /** The member the failure is about (-1 when it is not about one member, e.g. a closed group). */
    public int rank() {
        return rank;
    }
}
