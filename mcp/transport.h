#pragma once
// A transport moves whole JSON-RPC messages between the peer and a MessageHandler; framing
// never leaks past it. run() delivers frames from one thread, in arrival order; send() may be
// called from any thread at any time, including from inside a handler.

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace byd::mcp {

class MessageHandler {
 public:
  virtual ~MessageHandler() = default;
  // One complete frame: the text of a JSON message (not yet parsed).
  virtual void onFrame(std::string_view frame) = 0;
  // A frame longer than the transport's limit was discarded unread; `bytes` is its length.
  virtual void onOversizedFrame(size_t bytes) = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Delivers frames to `handler` until the peer closes or stop() is called.
  virtual Status run(MessageHandler& handler) = 0;
  // Sends one message. Thread-safe; a closed peer is not an error here.
  virtual void send(const nlohmann::json& message) = 0;
  // Makes run() return soon. Async-signal-safe.
  virtual void stop() = 0;
  // Ends the connection that would carry the answer to request `id` (serialized), leaving the
  // stream resumable: the client reconnects with Last-Event-ID and receives the rest. False
  // where streams are not resumable (stdio, older revisions); then nothing happens.
  virtual bool closeStream(const std::string& /*id*/) { return false; }
  // Request `id` (serialized) was cancelled and its work has stopped: no answer will come. A
  // transport that holds a stream open for the answer ends it now, so the stream's end tells
  // the client the work is over.
  virtual void unanswered(const std::string& /*id*/) {}
};

}  // namespace byd::mcp
