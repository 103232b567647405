package dev.jrdma.spi;

/** Receives completions from {@link CompletionQueue#poll}, one call each, on the polling thread. */
@FunctionalInterface
public interface CompletionSink {
    /**
     * @param wrId    the id the request was posted with
     * @param status  {@link WorkCompletion} status ({@code SUCCESS} = 0)
     * @param opcode  {@link WorkCompletion} opcode
     * @param byteLen bytes received (receives) or transferred
     * @param imm     immediate data (host order), meaningful when {@code withImm}
     */
    void onCompletion(long wrId, int status, int opcode, int byteLen, int imm, boolean withImm);
}
