/**
 * Implementation of {@code dev.hurray} that touches native addresses and upcall stubs. Not an
 * API: nothing here is stable, and it is left out of the published documentation.
 *
 * <p>Rules kept here: every upcall catches {@link java.lang.Throwable}, stores 0 in its
 * out-count and returns {@code HURRAY_ERR_TRANSPORT}; the upcall stubs are made once per process
 * (global arena) and find their transport through the native {@code ctx}, a slot in a table that
 * the transport holds from creation until its native handle is destroyed; no call uses
 * {@code Linker.Option.critical} (reader and writer calls call back into Java).
 */
package dev.hurray.internal;
