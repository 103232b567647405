package dev.jrdma.collective;

import dev.jrdma.exceptions.RdmaException;

/**
 * A collective failed because of one member: it died, its connection failed, it did not answer
 * in time, or what it sent did not fit. {@link #rank()} names that member; the message says
 * which collective (its name and number in the group) and what happened.
 */
public class CollectiveException extends RdmaException {
    /** The rank of the member the collective failed because of. */
    private final int rank;

    /**
     * A collective failed because of the member of {@code rank}; {@code message} says how.
     *
     * @param rank the rank, 0 to the group's size - 1
     * @param message what happened, naming what was wrong
     */
    public CollectiveException(int rank, String message) {
        this(rank, message, null);
    }

    /**
     * A collective failed because of the member of {@code rank}, with {@code cause}; {@code message} says how.
     *
     * @param rank the rank, 0 to the group's size - 1
     * @param message what happened, naming what was wrong
     * @param cause what caused it
     */
    public CollectiveException(int rank, String message, Throwable cause) {
        super(message, cause);
        this.rank = rank;
    }

    /** {@return the member the failure is about (-1 when it is not about one member, e.g} a closed group). */
    public int rank() {
        return rank;
    }
}
