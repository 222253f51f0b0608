package dev.hurray.arrow;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** A fresh Arrow allocator per test, closed afterwards: closing throws if any Arrow buffer is still referenced. */
abstract class WithAllocator {
    BufferAllocator allocator;

    @BeforeEach
    void open() {
        ArrowTensors.register();
        allocator = new RootAllocator();
    }

    @AfterEach
    void noLeaks() {
        allocator.close();
    }
}
