#include "ir/shared_weights.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "ir/dtype.h"

namespace loom {
namespace {

// The tensors kept, by a key of their content, while some graph holds
// them: entries hold no reference, so a tensor goes with the last graph
// that holds it.
class SharedTensors {
 public:
  static SharedTensors& Get() {
    static SharedTensors* tensors = new SharedTensors;
    return *tensors;
  }

  // The tensor kept under `key` and still held, or null. Where `source` is
  // not null, the key names the source's address, which one that died may
  // have left to another: the tensor must have been derived from `source`.
  std::shared_ptr<const LazyTensor> Find(const std::string& key, const LazyTensor* source) {
    absl::MutexLock lock(&mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return nullptr;
    if (source != nullptr && it->second.source.lock().get() != source) return nullptr;
    return it->second.tensor.lock();
  }

  // The key `tensor` was kept under, if this table kept it and it was not
  // keyed by its source's address.
  std::optional<std::string> KeyOf(const LazyTensor* tensor) {
    absl::MutexLock lock(&mutex_);
    auto key = keys_.find(tensor);
    if (key == keys_.end()) return std::nullopt;
    auto it = entries_.find(key->second);
    if (it == entries_.end() || it->second.tensor.lock().get() != tensor) return std::nullopt;
    return key->second;
  }

  void Keep(const std::string& key, const std::shared_ptr<const LazyTensor>& source,
            const std::shared_ptr<const LazyTensor>& tensor) {
    absl::MutexLock lock(&mutex_);
    entries_[key] = Entry{source, tensor};
    if (source == nullptr) keys_[tensor.get()] = key;
    if (entries_.size() < sweep_at_) return;
    absl::erase_if(entries_, [](const auto& entry) { return entry.second.tensor.expired(); });
    absl::erase_if(keys_, [&](const auto& key) { return !entries_.contains(key.second); });
    sweep_at_ = std::max<size_t>(kFirstSweep, 2 * entries_.size());
  }

 private:
  struct Entry {
    std::weak_ptr<const LazyTensor> source;  // where the key names its address
    std::weak_ptr<const LazyTensor> tensor;
  };
  static constexpr size_t kFirstSweep = 256;

  absl::Mutex mutex_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mutex_);
  absl::flat_hash_map<const LazyTensor*, std::string> keys_ ABSL_GUARDED_BY(mutex_);
  size_t sweep_at_ ABSL_GUARDED_BY(mutex_) = kFirstSweep;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const LazyTensor>> SharedFileTensor(
    const std::string& path, int64_t offset, const TensorType& type,
    absl::FunctionRef<absl::StatusOr<Tensor>()> read) {
  struct stat file;
  const bool known = stat(path.c_str(), &file) == 0;  // else read() says why
  const std::string key =
      known ? absl::StrCat("file ", file.st_dev, " ", file.st_ino, " ", file.st_size, " ",
                           file.st_mtim.tv_sec, ".", file.st_mtim.tv_nsec, " at ", offset, " ",
                           TypeToString(type))
            : "";
  if (known) {
    std::shared_ptr<const LazyTensor> kept = SharedTensors::Get().Find(key, nullptr);
    if (kept != nullptr) return kept;
  }
  absl::StatusOr<Tensor> tensor = read();
  if (!tensor.ok()) return tensor.status();
  auto shared = std::make_shared<const LazyTensor>(*std::move(tensor));
  if (known) SharedTensors::Get().Keep(key, nullptr, shared);
  return shared;
}

std::shared_ptr<const LazyTensor> SharedDerivedTensor(
    const std::shared_ptr<const LazyTensor>& source, absl::string_view transform, TensorType type,
    std::function<Tensor(const Tensor&)> derive) {
  // Keyed by the source's content where the table knows it (a weight read
  // from a file, or derived from one), so that a source read again after
  // every graph dropped it finds what was derived from it then.
  SharedTensors& tensors = SharedTensors::Get();
  const std::optional<std::string> source_key = tensors.KeyOf(source.get());
  const std::string key =
      source_key.has_value()
          ? absl::StrCat(*source_key, " | ", transform)
          : absl::StrCat("derived from ", reinterpret_cast<uintptr_t>(source.get()), " | ",
                         transform);
  const LazyTensor* address = source_key.has_value() ? nullptr : source.get();
  if (std::shared_ptr<const LazyTensor> kept = tensors.Find(key, address)) return kept;
  std::shared_ptr<const LazyTensor> derived = Derived(source, std::move(type), std::move(derive));
  tensors.Keep(key, source_key.has_value() ? nullptr : source, derived);
  return derived;
}

}  // namespace loom
