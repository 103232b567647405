package dev.jrdma.spi;

/** Receives a device's asynchronous events ({@code ibv_get_async_event}). */
public interface DeviceEventHandler {
    /**
     * @param type   the verbs name, e.g. "IBV_EVENT_QP_FATAL", "IBV_EVENT_PORT_ERR"
     * @param fatal  the QP (or the whole device, when {@code qpNum} is -1) can no longer be used
     * @param qpNum  the QP the event is about, or -1
     * @param port   the port the event is about, or -1
     */
    void onDeviceEvent(String type, boolean fatal, int qpNum, int port);
}
