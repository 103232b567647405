package dev.jrdma.netty;

import org.junit.jupiter.api.Test;

import java.util.EnumSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link ChannelState} answers as the booleans it replaced did ({@code open}, {@code active},
 * {@code inputShutdown}): isOpen was {@code open}, isActive {@code open && active}, and
 * isInputShutdown {@code inputShutdown || !isActive()}; and a client channel that never connected
 * reads so before and after its close.
 */
class ChannelStateTest {
    private static final Set<ChannelState> INPUT_SHUT = EnumSet.of(ChannelState.INPUT_SHUTDOWN,
            ChannelState.INPUT_SHUTDOWN_READ_COMPLETE);

    @Test
    void eachStateAnswersAsTheBooleansItReplaced() {
        for (ChannelState s : ChannelState.values()) {
            boolean open = s != ChannelState.CLOSED;
            boolean active = s == ChannelState.ACTIVE || INPUT_SHUT.contains(s);
            boolean inputShutdown = INPUT_SHUT.contains(s);
            assertThat(s.isOpen()).as("%s isOpen", s).isEqualTo(open);
            assertThat(s.isActive()).as("%s isActive", s).isEqualTo(open && active);
            assertThat(s.isInputShutdown()).as("%s isInputShutdown", s).isEqualTo(inputShutdown || !(open && active));
        }
    }

    @Test
    void aClientChannelIsOpenAndInactiveUntilItConnectsAndClosedAfterItsClose() {
        JrdmaSocketChannel ch = new JrdmaSocketChannel();
        assertThat(ch.state()).isEqualTo(ChannelState.OPEN);
        assertThat(ch.isOpen()).isTrue();
        assertThat(ch.isActive()).isFalse();
        assertThat(ch.isInputShutdown()).isTrue();
        assertThat(ch.isOutputShutdown()).isTrue();

        ch.unsafe().closeForcibly();   // not registered: doClose runs here, with no stream to end
        assertThat(ch.state()).isEqualTo(ChannelState.CLOSED);
        assertThat(ch.isOpen()).isFalse();
        assertThat(ch.isActive()).isFalse();
        assertThat(ch.isShutdown()).isTrue();
    }
}
