package dev.jrdma.spi;

/**
 * Receives completions from a completion queue that several queue pairs share
 * ({@link CompletionQueue#pollShared}), one call each, on the polling thread: as
 * {@link CompletionSink}, with the queue pair the completion is of.
 */
@FunctionalInterface
public interface SharedCompletionSink {
    /**
     * @param qpNum   the number of the queue pair the completion is of ({@code ibv_wc.qp_num})
     * @param wrId    the id the request was posted with
     * @param status  {@link WorkCompletion} status ({@code SUCCESS} = 0)
     * @param opcode  {@link WorkCompletion} opcode
     * @param byteLen bytes received (receives) or transferred
     * @param imm     immediate data (host order), meaningful when {@code withImm}
     */
    void onCompletion(int qpNum, long wrId, int status, int opcode, int byteLen, int imm, boolean withImm);
}
