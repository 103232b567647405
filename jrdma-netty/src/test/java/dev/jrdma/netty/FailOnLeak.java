package dev.jrdma.netty;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * After every JUnit Jupiter test of this module (registered for all of them through
 * {@code META-INF/services} and {@code junit.jupiter.extensions.autodetection.enabled}): fails it
 * when Netty's leak detector found a buffer collected without release ({@link LeakRecorder}).
 */
public final class FailOnLeak implements AfterEachCallback {
    @Override
    public void afterEach(ExtensionContext context) {
        LeakRecorder.assertNoLeak(context.getDisplayName() + " in " + context.getRequiredTestClass().getSimpleName());
    }
}
