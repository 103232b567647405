package dev.jrdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * With leak detection on, a region dropped without close is reported (a log warning, logger
 * dev.jrdma) with where it was made; a closed one is not, and the dropped one's memory is
 * still released when the Rdma closes.
 */
class LeakDetectionTest {
    @Test
    void aRegionCollectedWithoutCloseIsReportedWithWhereItWasMade() throws Exception {
        try (Rdma rdma = Rdma.builder().provider("tcp").leakDetection(true).build()) {
            rdma.allocate(100).close();   // closed: never reported
            dropOne(rdma);
            List<Throwable> reports = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (reports.isEmpty() && System.nanoTime() < deadline) {
                System.gc();
                Thread.sleep(20);
                reports.addAll(rdma.reportLeaks());
            }
            assertEquals(1, reports.size(), "one report: " + reports);
            Throwable r = reports.get(0);
            assertTrue(r.getMessage().contains("length=4242"), r.getMessage());
            boolean here = false;
            for (StackTraceElement e : r.getStackTrace()) {
                here |= e.getMethodName().equals("dropOne");
            }
            assertTrue(here, "the stack says where it was made");
            assertTrue(rdma.reportLeaks().isEmpty(), "reported once");
        }
    }

    @Test
    void withoutItNothingIsWatched() {
        try (Rdma rdma = Rdma.builder().provider("tcp").build()) {
            dropOne(rdma);
            System.gc();
            assertTrue(rdma.reportLeaks().isEmpty());
        }
    }

    private static void dropOne(Rdma rdma) {
        rdma.allocate(4242).segment().fill((byte) 1);   // and forgotten
    }
}
