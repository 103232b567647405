package dev.jrdma.netty;

import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/**
 * Netty's connection-attempt tests need a "bad host": an address whose connect neither succeeds
 * nor fails for a while. Their default is an address outside this machine, which tests here may
 * not reach (they talk to loopback only), so before any test runs this opens a TCP listener on
 * loopback that never accepts: the kernel completes the TCP handshake and jrdma's own handshake
 * then waits. {@code io.netty.testsuite.badHost} and {@code badPort} name it.
 */
public final class SilentListener implements LauncherSessionListener {
    private static ServerSocket silent;

    @Override
    public void launcherSessionOpened(LauncherSession session) {
        synchronized (SilentListener.class) {
            if (silent != null) {
                return;
            }
            try {
                silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            } catch (IOException e) {
                throw new UncheckedIOException("no silent listener for Netty's connection-attempt tests", e);
            }
            System.setProperty("io.netty.testsuite.badHost", silent.getInetAddress().getHostAddress());
            System.setProperty("io.netty.testsuite.badPort", Integer.toString(silent.getLocalPort()));
        }
    }

    @Override
    public void launcherSessionClosed(LauncherSession session) {
        synchronized (SilentListener.class) {
            try {
                if (silent != null) {
                    silent.close();
                }
            } catch (IOException ignored) {
                // closing at the end of the run: nothing to do about it
            }
            silent = null;
        }
    }
}
