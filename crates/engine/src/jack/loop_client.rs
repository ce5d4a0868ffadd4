//! A software loop inside a JACK server: a client with an input `in` and an output `out`
//! that copies one to the other `delay_frames` later. audiolat's round trip uses it when
//! no cable can close the loop (the dummy driver's capture is silence), and `audiolat
//! loop` runs it on its own, so any tool (jack_iodelay) can measure the same loop.
//!
//! JACK runs the loop client after the client feeding its input and before the one it
//! feeds, except across the feedback edge that closes the loop: there the data waits for
//! the next cycle. A loop from a client's output through this client back to the same
//! client's input therefore takes one period plus `delay_frames`.
//!
//! The process callback copies through a ring buffer sized at start: no allocation, lock
//! or print on JACK's thread.

use crate::audio::{AudioError, StreamSetting};
use crate::jack::client::CallbackExit;
use crate::jack::server::open_client;
use std::sync::Arc;

/// The most frames a loop delays by.
pub const MAX_DELAY_FRAMES: u32 = 1 << 20;

struct LoopHandler {
    input: jack::Port<jack::AudioIn>,
    output: jack::Port<jack::AudioOut>,
    ring: Vec<f32>,
    mask: usize,
    delay: usize,
    write: usize,
    exit: std::sync::Arc<CallbackExit>,
}

impl jack::ProcessHandler for LoopHandler {
    fn process(&mut self, _: &jack::Client, ps: &jack::ProcessScope) -> jack::Control {
        if self.exit.enter() {
            self.output.as_mut_slice(ps).fill(0.0);
            self.exit.leave();
            return jack::Control::Quit;
        }
        let input = self.input.as_slice(ps);
        let output = self.output.as_mut_slice(ps);
        for (x, y) in input.iter().zip(output.iter_mut()) {
            self.ring[self.write & self.mask] = *x;
            *y = self.ring[(self.write.wrapping_sub(self.delay)) & self.mask];
            self.write = self.write.wrapping_add(1);
        }
        self.exit.leave();
        jack::Control::Continue
    }
}

/// A running loop client; dropping it closes the client.
pub struct JackLoop {
    client: Option<jack::AsyncClient<(), LoopHandler>>,
    exit: Arc<CallbackExit>,
    name: String,
    delay_frames: u32,
}

impl JackLoop {
    /// Refuses a delay longer than [`MAX_DELAY_FRAMES`], before anything is opened.
    pub fn check_delay(delay_frames: u32) -> Result<(), AudioError> {
        if delay_frames > MAX_DELAY_FRAMES {
            return Err(AudioError::OutOfRange {
                setting: StreamSetting::LoopDelay,
                value: delay_frames,
                problem: format!("a loop delays by at most {MAX_DELAY_FRAMES} frames"),
            });
        }
        Ok(())
    }

    /// Starts a loop client named `client_name` on `server` delaying by `delay_frames`.
    pub fn start(
        server: &str,
        client_name: &str,
        delay_frames: u32,
    ) -> Result<JackLoop, AudioError> {
        JackLoop::check_delay(delay_frames)?;
        let client = open_client(server, client_name)?;
        let err = |op: &'static str| {
            move |e: jack::Error| AudioError::Jack {
                op,
                detail: e.to_string(),
            }
        };
        let input = client
            .register_port("in", jack::AudioIn::default())
            .map_err(err("registering the loop's input"))?;
        let output = client
            .register_port("out", jack::AudioOut::default())
            .map_err(err("registering the loop's output"))?;
        // Room for the delay plus the largest period JACK runs.
        let size = (delay_frames as usize + 8192 + 1).next_power_of_two();
        let name = client.name().to_string();
        let exit = Arc::<CallbackExit>::default();
        let handler = LoopHandler {
            exit: exit.clone(),
            input,
            output,
            ring: vec![0.0; size],
            mask: size - 1,
            delay: delay_frames as usize,
            write: 0,
        };
        let active = client
            .activate_async((), handler)
            .map_err(err("activating the loop client"))?;
        Ok(JackLoop {
            client: Some(active),
            exit,
            name,
            delay_frames,
        })
    }

    /// The client's name on the server (JACK may have added a suffix).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The loop's input port.
    pub fn input_port(&self) -> String {
        format!("{}:in", self.name)
    }

    /// The loop's output port.
    pub fn output_port(&self) -> String {
        format!("{}:out", self.name)
    }

    /// Frames the loop adds to a period.
    pub fn delay_frames(&self) -> u32 {
        self.delay_frames
    }
}

impl Drop for JackLoop {
    fn drop(&mut self) {
        if let Some(active) = self.client.take() {
            crate::jack::client::deactivate_with_deadline(active, &self.exit);
        }
    }
}
