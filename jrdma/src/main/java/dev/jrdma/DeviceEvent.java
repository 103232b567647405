package dev.jrdma;

/**
 * An asynchronous event of the device ({@code ibv_get_async_event}), as given to the listener
 * set with {@link Rdma.Builder#onDeviceEvent}, on IO thread 0.
 *
 * @param device     the device name
 * @param type       the verbs name, e.g. "IBV_EVENT_PORT_ERR", "IBV_EVENT_QP_FATAL"
 * @param fatal      what it is about can no longer be used; a fatal QP event has put its
 *                   connection in {@link ConnectionState#ERROR} and failed its operations
 * @param port       the port it is about, or -1
 * @param qpNum      the QP it is about, or -1
 * @param connection this instance's connection on that QP, or null
 */
public record DeviceEvent(String device, String type, boolean fatal, int port, int qpNum, Connection connection) {
}
