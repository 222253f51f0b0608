package dev.hurray.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;

/**
 * Blocking byte channels over memory, so the in-memory benchmarks exercise the same channel
 * transports as the socket ones without a kernel in the way. None of them ever returns 0 from
 * a read: an empty pipe throws instead, so a harness bug fails fast rather than spinning.
 */
final class MemoryChannels {
    private MemoryChannels() {
    }

    /** A sink that copies every byte into one reused direct buffer, wrapping to its start when full. */
    static final class RingSink implements WritableByteChannel {
        private final ByteBuffer ring;
        private long total;

        RingSink(int capacity) {
            ring = ByteBuffer.allocateDirect(capacity);
        }

        @Override
        public int write(ByteBuffer src) {
            int n = src.remaining();
            while (src.hasRemaining()) {
                if (!ring.hasRemaining()) {
                    ring.clear();
                }
                int k = Math.min(src.remaining(), ring.remaining());
                ring.put(ring.position(), src, src.position(), k);
                ring.position(ring.position() + k);
                src.position(src.position() + k);
            }
            total += n;
            return n;
        }

        /** Bytes written so far. */
        long total() {
            return total;
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {
        }
    }

    /** A source that serves {@code head} once, then {@code item} over and over, forever. */
    static final class CyclicSource implements ReadableByteChannel {
        private final ByteBuffer head;
        private final ByteBuffer item;

        CyclicSource(byte[] head, byte[] item) {
            if (item.length == 0) {
                throw new IllegalArgumentException("empty item");
            }
            this.head = ByteBuffer.allocateDirect(head.length).put(head).flip();
            this.item = ByteBuffer.allocateDirect(item.length).put(item).flip();
        }

        @Override
        public int read(ByteBuffer dst) {
            int n = 0;
            while (dst.hasRemaining()) {
                ByteBuffer from = head.hasRemaining() ? head : item;
                if (!from.hasRemaining()) {
                    item.rewind();
                    from = item;
                }
                int k = Math.min(dst.remaining(), from.remaining());
                dst.put(dst.position(), from, from.position(), k);
                dst.position(dst.position() + k);
                from.position(from.position() + k);
                n += k;
            }
            return n;
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {
        }
    }

    /**
     * A single-threaded pipe over one direct buffer: what {@link #sink()} takes, {@link #source()}
     * gives back in order. When the reader has caught up, both ends restart at offset 0, so a
     * write-one/read-one loop reuses the same memory forever.
     */
    static final class Pipe {
        private final ByteBuffer buf;
        private int readPos;
        private final WritableByteChannel sink = new WritableByteChannel() {
            @Override
            public int write(ByteBuffer src) throws IOException {
                int n = src.remaining();
                if (n > buf.remaining()) {
                    throw new IOException("memory pipe full: " + n + " bytes offered, " + buf.remaining() + " free");
                }
                buf.put(src);
                return n;
            }

            @Override
            public boolean isOpen() {
                return true;
            }

            @Override
            public void close() {
            }
        };
        private final ReadableByteChannel source = new ReadableByteChannel() {
            @Override
            public int read(ByteBuffer dst) throws IOException {
                int avail = buf.position() - readPos;
                if (avail == 0) {
                    throw new IOException("memory pipe empty: the reader asked for more than was written");
                }
                int k = Math.min(avail, dst.remaining());
                dst.put(dst.position(), buf, readPos, k);
                dst.position(dst.position() + k);
                readPos += k;
                if (readPos == buf.position()) {
                    readPos = 0;
                    buf.clear();
                }
                return k;
            }

            @Override
            public boolean isOpen() {
                return true;
            }

            @Override
            public void close() {
            }
        };

        Pipe(int capacity) {
            buf = ByteBuffer.allocateDirect(capacity);
        }

        WritableByteChannel sink() {
            return sink;
        }

        ReadableByteChannel source() {
            return source;
        }
    }
}
