package dev.jrdma.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;

import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;

import java.lang.ref.PhantomReference;
import java.lang.ref.ReferenceQueue;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Makes Netty's leak detector fail tests instead of only logging: before any buffer class is
 * loaded (this runs when the test launcher opens) it installs a leak detector factory whose
 * detectors record every leak they report, and {@link #assertNoLeak} collects garbage, makes the
 * detector look at what was collected, and fails naming each leak with the access records Netty
 * kept. Every test of this module runs with {@code -Dio.netty.leakDetection.level=PARANOID}, so
 * every buffer is tracked. {@link FailOnLeak} calls it after each JUnit Jupiter test (Netty's
 * suite included); the gRPC interop test (JUnit 4) calls it in its tear-down.
 */
public final class LeakRecorder implements LauncherSessionListener {
    private static final List<String> LEAKS = new ArrayList<>();

    @Override
    public void launcherSessionOpened(LauncherSession session) {
        install();
    }

    static synchronized void install() {
        if (ResourceLeakDetectorFactory.instance() instanceof RecordingFactory) {
            return;
        }
        ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new RecordingFactory());
    }

    private static final class RecordingFactory extends ResourceLeakDetectorFactory {
        @Override
        @SuppressWarnings("deprecation")   // the abstract method Netty 4.1 still calls for some detectors
        public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource, int samplingInterval, long maxActive) {
            return newResourceLeakDetector(resource, samplingInterval);
        }

        @Override
        public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource, int samplingInterval) {
            ResourceLeakDetector<T> detector = new ResourceLeakDetector<>(resource, samplingInterval);
            detector.setLeakListener((type, records) -> {
                synchronized (LEAKS) {
                    LEAKS.add(type + (records.isEmpty() ? " (no access recorded)" : ":" + records));
                }
            });
            return detector;
        }
    }

    /** Collects garbage and waits (at most 10 s) until a reference it cleared has been queued. */
    private static void awaitCollection() {
        ReferenceQueue<Object> collected = new ReferenceQueue<>();
        PhantomReference<Object> sentinel = new PhantomReference<>(new Object(), collected);
        try {
            for (int i = 0; i < 10; i++) {
                System.gc();
                if (collected.remove(TimeUnit.SECONDS.toMillis(1)) != null) {
                    break;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        java.lang.ref.Reference.reachabilityFence(sentinel);
    }

    /**
     * Fails when a buffer was collected without being released since the last call: collects
     * garbage, waits until the collector's references have been queued (references of its own are
     * the events), then has the buffer detector look at its queue (it does at each new buffer).
     */
    public static void assertNoLeak(String after) {
        if (!(ResourceLeakDetectorFactory.instance() instanceof RecordingFactory)) {
            throw new AssertionError("the leak recorder is not installed: leaks would only be logged");
        }
        // Two collections, each with a sentinel reference: the reference handler queues one
        // collection's references before the next one's, so once the second sentinel is queued,
        // every reference the first found (the detector's among them) is in its queue.
        awaitCollection();
        awaitCollection();
        // Each allocation lets the detector of its kind report what it found collected.
        for (ByteBuf b : new ByteBuf[] {PooledByteBufAllocator.DEFAULT.directBuffer(1), PooledByteBufAllocator.DEFAULT.heapBuffer(1),
                UnpooledByteBufAllocator.DEFAULT.directBuffer(1), UnpooledByteBufAllocator.DEFAULT.heapBuffer(1)}) {
            b.release();
        }
        List<String> found;
        synchronized (LEAKS) {
            found = new ArrayList<>(LEAKS);
            LEAKS.clear();
        }
        if (!found.isEmpty()) {
            throw new AssertionError(found.size() + " leak(s) found after " + after + " (a buffer collected without release):\n"
                    + String.join("\n", found));
        }
    }
}
