package dev.jrdma.collective;

import static dev.jrdma.collective.GroupWireDescriptor.BARRIER;
import static dev.jrdma.collective.GroupWireDescriptor.DATA;
import static dev.jrdma.collective.GroupWireDescriptor.READY;
import static dev.jrdma.collective.GroupWireDescriptor.SYNC;
import static dev.jrdma.collective.GroupWireDescriptor.imm;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;

import org.junit.jupiter.api.Test;

/**
 * One member's inbox as the group's IO thread fills it: kept within its budget of messages and
 * bytes, freed as messages are asked for, what earlier collectives left dropped, and what no
 * honest member sends said so.
 */
class PeerInboxTest {
    private static final byte[] DESCRIPTOR = new byte[40];

    @Test
    void theBudgetCountsMessagesAndBytesAndFreesWhatIsAskedFor() {
        PeerInbox in = new PeerInbox(100, 10 * (40 + GroupConfig.INBOX_ENTRY_BYTES));   // bytes for 10 descriptors
        for (int seq = 1; seq <= 10; seq++) {
            assertNull(in.deliver(imm(READY, seq), DESCRIPTOR), "READY " + seq);
        }
        assertEquals(10, in.kept());
        assertEquals(10 * (40 + GroupConfig.INBOX_ENTRY_BYTES), in.keptBytes());
        String why = in.deliver(imm(READY, 11), DESCRIPTOR);
        assertNotNull(why, "the 11th is past the byte budget");
        assertTrue(why.contains("11 messages (1144 bytes) not asked for yet") && why.contains("1040 bytes"), why);
        assertEquals(10, in.kept(), "the refused one is not kept");
        // Asked for: out of the budget, and room for the next.
        assertEquals(40, in.expect(imm(READY, 1)).join().length);
        assertNull(in.deliver(imm(READY, 11), DESCRIPTOR));
        PeerInbox counted = new PeerInbox(3, 1 << 20);
        for (int seq = 1; seq <= 3; seq++) {
            assertNull(counted.deliver(imm(DATA, seq), null));
        }
        why = counted.deliver(imm(DATA, 4), null);
        assertTrue(why != null && why.contains("past the inbox budget of 3 messages"), why);
    }

    @Test
    void aMessageWaitedForIsHandedOverWithoutBeingKept() {
        PeerInbox in = new PeerInbox(1, GroupConfig.INBOX_ENTRY_BYTES);
        CompletableFuture<byte[]> f = in.expect(imm(READY, 7));
        assertNull(in.deliver(imm(READY, 7), DESCRIPTOR));
        assertArrayEquals(DESCRIPTOR, f.join());
        assertEquals(0, in.kept());
        assertEquals(0, in.keptBytes());
    }

    @Test
    void whatEarlierCollectivesLeftIsDroppedWhenTheNextStarts() {
        PeerInbox in = new PeerInbox(8, 1 << 20);
        assertNull(in.deliver(imm(SYNC, 0), new byte[8]));
        assertNull(in.deliver(imm(BARRIER, 3), null));   // a collective that failed here before it came
        assertNull(in.deliver(imm(BARRIER, 5), null));   // the peer is one ahead
        assertNull(in.deliver(imm(READY, 1), DESCRIPTOR));   // one that ended here
        in.forgetBefore(4);
        assertEquals(2, in.kept(), "SYNC and #5 stay, #1 and #3 go");
        assertTrue(in.expect(imm(BARRIER, 5)).isDone(), "what is ahead stays");
        assertTrue(in.expect(imm(SYNC, 0)).isDone(), "SYNC is never dropped");
        // Numbers wrap at 2^24: #1 is 2 ahead of #16777215, #16777213 2 behind.
        PeerInbox wrap = new PeerInbox(8, 1 << 20);
        assertNull(wrap.deliver(imm(DATA, 1), null));
        assertNull(wrap.deliver(imm(DATA, GroupWireDescriptor.SEQ_MASK - 2), null));
        wrap.forgetBefore(GroupWireDescriptor.SEQ_MASK);
        assertEquals(1, wrap.kept());
        assertTrue(wrap.expect(imm(DATA, 1)).isDone(), "the one after the wrap stays");
        assertEquals(0, in.keptBytes());
    }

    @Test
    void aSecondCopyOfAMessageNotAskedForIsNamed() {
        PeerInbox in = new PeerInbox(8, 1 << 20);
        assertNull(in.deliver(imm(READY, 9), DESCRIPTOR));
        String why = in.deliver(imm(READY, 9), new byte[40]);
        assertTrue(why != null && why.contains("a second READY for collective 9"), why);
        assertArrayEquals(DESCRIPTOR, in.expect(imm(READY, 9)).join(), "the first stays");
    }

    @Test
    void aLostMemberKeepsNothingAndEveryWaitFails() {
        PeerInbox in = new PeerInbox(8, 1 << 20);
        CompletableFuture<byte[]> waiting = in.expect(imm(DATA, 1));
        assertNull(in.deliver(imm(DATA, 2), null));
        assertTrue(in.lose(new CollectiveException(1, "gone")));
        assertTrue(waiting.isCompletedExceptionally());
        assertEquals(0, in.kept());
        assertNull(in.deliver(imm(DATA, 3), null), "nothing is kept, nothing refused");
        assertEquals(0, in.kept());
        assertTrue(in.expect(imm(DATA, 3)).isCompletedExceptionally());
        assertTrue(!in.lose(new CollectiveException(1, "again")), "lost once");
    }

    @Test
    void onlyWhatAnHonestMemberSendsPassesThePayloadCheck() {
        assertNull(GroupWireDescriptor.checkPayload(READY, 40));
        assertNull(GroupWireDescriptor.checkPayload(DATA, 0));
        assertNull(GroupWireDescriptor.checkPayload(BARRIER, 1));
        assertNull(GroupWireDescriptor.checkPayload(SYNC, 8));
        assertTrue(GroupWireDescriptor.checkPayload(READY, 4096).contains("a READY of 4096 bytes"));
        assertTrue(GroupWireDescriptor.checkPayload(SYNC, 9).contains("a SYNC of 9 bytes"));
        assertTrue(GroupWireDescriptor.checkPayload(77, 0).contains("kind 77, which is not a PeerGroup message"));
    }
}
