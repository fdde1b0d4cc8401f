class SessionsController < ApplicationController
  def restore
    # ruleid: aster.ruby.insecure-deserialization
    state = Marshal.load(Base64.decode64(cookies[:state]))
  end

  def import
    # ruleid: aster.ruby.insecure-deserialization
    YAML.unsafe_load(request.body.read)
  end
end
