class SessionsController < ApplicationController
  def restore
    state = JSON.parse(cookies[:state])
    config = YAML.safe_load(File.read("config/app.yml"))
    cached = Marshal.load(File.binread("tmp/cache.bin"))
  end
end
