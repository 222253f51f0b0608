package dev.hurray.bench;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * The baseline: the same payload bytes moved by a plain blocking {@code SocketChannel}, each
 * side with one direct {@code ByteBuffer} of the message size allocated once and reused (the
 * best a hand-written Java sender and receiver can do; no framing at all).
 */
final class RawLoopback extends Loopback {
    private final ByteBuffer in;

    RawLoopback(int size) throws IOException {
        super(size);
        in = ByteBuffer.allocateDirect(size);
        start();
    }

    @Override
    protected void send() throws IOException {
        ByteBuffer out = ByteBuffer.allocateDirect(size);
        Payloads.fill(out);
        while (!stopping()) {
            out.clear();
            while (out.hasRemaining()) {
                senderChannel.write(out);
            }
        }
    }

    @Override
    protected long receive(boolean check) throws IOException {
        in.clear();
        while (in.hasRemaining()) {
            if (receiverChannel.read(in) < 0) {
                throw new EOFException("the connection closed");
            }
        }
        if (check) {
            check(MemorySegment.ofBuffer(in.flip()));
        }
        return size;
    }

    @Override
    protected void closeReceiver() {
    }
}
