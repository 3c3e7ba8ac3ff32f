"""A whole-program jit (one call compiles, then a scan runs whose every step waits in a host
callback) while another thread compiles a function of its own; then a short eager loop.

Writes what it measured itself to the JSON file named by TIME_SPLIT_OUT: the first call's
duration on the program's thread, the time its callbacks slept, and the compile events JAX
reported in each thread (its own jax.monitoring listener).
"""

import json
import os
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np

STEPS = 8
SLEEP_S = 0.05
events = []


def listen(event, duration, **kwargs):
    if event.startswith("/jax/core/compile/"):
        events.append((threading.get_ident() == threading.main_thread().ident, duration))


jax.monitoring.register_event_duration_secs_listener(listen)


def pause(x):
    time.sleep(SLEEP_S)
    return np.asarray(x)


@jax.jit
def train(w):
    def step(w, _):
        w = jax.pure_callback(pause, jax.ShapeDtypeStruct(w.shape, w.dtype), w)
        return w * 0.5 + jnp.tanh(w), None
    return jax.lax.scan(step, w, None, length=STEPS)[0]


def other_thread():
    jax.block_until_ready(jax.jit(lambda v: jnp.cos(v) @ v.T)(jnp.ones((8, 8))))


worker = threading.Thread(target=other_thread)
worker.start()
start = time.perf_counter()
w = jax.block_until_ready(train(jnp.ones(4)))
first_call_s = time.perf_counter() - start
worker.join()

for _ in range(5):  # eager
    w = jnp.sin(w) + 1.0
print(float(w.sum()))

with open(os.environ["TIME_SPLIT_OUT"], "w") as out:
    json.dump({"first_call_s": first_call_s, "slept_s": STEPS * SLEEP_S,
               "main_thread_events_s": sum(d for main, d in events if main),
               "other_thread_events_s": sum(d for main, d in events if not main)}, out)
